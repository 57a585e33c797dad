/**
 * Where a Telegram message becomes the core's InboundMessage, without HTTP:
 * which messages are for the core, the ids and names it gets, the text
 * without the bot's mention, whether a group message addresses the bot, and
 * which files it carries.
 */
import type { Chat, Message, Update, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import { chatIdOfUpdate, fileRefsOf, translateMessage } from "../../../daemon/adapters/telegram/inbound.js";

const bot = { id: 900, username: "helper_bot" };
const alice: User = { id: 111, is_bot: false, first_name: "Alice", last_name: "Liddell", username: "alice" };
const privateChat: Chat.PrivateChat = { id: 111, type: "private", first_name: "Alice" };
const group: Chat.SupergroupChat = { id: -100_123, type: "supergroup", title: "Team" };

function message(fields: Partial<Message> & { chat: Chat }): Message {
  return { message_id: 42, date: 1_700_000_000, from: alice, ...fields } as Message;
}

describe("translateMessage", () => {
  it("turns a private message into an InboundMessage with Telegram's ids, the send time in ms, and no mention flag", () => {
    expect(translateMessage(message({ chat: privateChat, text: "hello" }), bot, "tg")).toEqual({
      platform: "telegram",
      accountId: "tg",
      chatId: "111",
      chatType: "direct",
      userId: "111",
      userName: "alice",
      messageId: "42",
      text: "hello",
      sentAt: 1_700_000_000_000,
    });
  });

  it("names a sender without a username by their first and last name", () => {
    const anonymous: User = { id: 5, is_bot: false, first_name: "Ada", last_name: "Lovelace" };
    expect(translateMessage(message({ chat: privateChat, from: anonymous, text: "hi" }), bot, "tg")?.userName).toBe("Ada Lovelace");
    const firstOnly: User = { id: 6, is_bot: false, first_name: "Grace" };
    expect(translateMessage(message({ chat: privateChat, from: firstOnly, text: "hi" }), bot, "tg")?.userName).toBe("Grace");
  });

  it("reads a caption as the text when the message carries a file", () => {
    const doc = { file_id: "F1", file_unique_id: "U1", file_name: "a.txt" };
    expect(translateMessage(message({ chat: privateChat, caption: "see attached", document: doc }), bot, "tg")?.text).toBe("see attached");
  });

  it("in a group: strips the leading @mention and says the message addresses the bot", () => {
    const text = "@helper_bot what's up?";
    const got = translateMessage(message({ chat: group, text, entities: [{ type: "mention", offset: 0, length: 11 }] }), bot, "tg");
    expect(got).toMatchObject({ chatType: "group", chatId: "-100123", text: "what's up?", mentioned: true });
  });

  it("in a group: a command aimed at the bot reads as the bare command; a reply to the bot addresses it", () => {
    const command = translateMessage(message({ chat: group, text: "/new@helper_bot", entities: [{ type: "bot_command", offset: 0, length: 15 }] }), bot, "tg");
    expect(command).toMatchObject({ text: "/new", mentioned: true });
    const replied = message({ chat: group, text: "and then?" });
    // grammY types the replied-to message as `Message & { reply_to_message: undefined }`, which no
    // literal satisfies under exact optional properties: built like every message here, by `message`'s cast.
    replied.reply_to_message = message({ chat: group, text: "earlier", from: { id: bot.id, is_bot: true, first_name: "Helper" } }) as NonNullable<
      Message["reply_to_message"]
    >;
    expect(translateMessage(replied, bot, "tg")).toMatchObject({ text: "and then?", mentioned: true });
  });

  it("in a group: a message for someone else is passed on as not addressing the bot (the core applies the rule)", () => {
    const got = translateMessage(message({ chat: group, text: "@someone_else hi", entities: [{ type: "mention", offset: 0, length: 13 }] }), bot, "tg");
    expect(got).toMatchObject({ text: "@someone_else hi", mentioned: false });
  });

  it("is not for the core: channel posts, messages from bots, messages without a sender", () => {
    const channel: Chat.ChannelChat = { id: -100_999, type: "channel", title: "News" };
    expect(translateMessage(message({ chat: channel, text: "post" }), bot, "tg")).toBeUndefined();
    expect(translateMessage(message({ chat: privateChat, from: { id: 7, is_bot: true, first_name: "Other" }, text: "beep" }), bot, "tg")).toBeUndefined();
    const { from: _sender, ...anonymous } = message({ chat: privateChat, text: "who?" });
    expect(translateMessage(anonymous, bot, "tg")).toBeUndefined();
  });
});

describe("forum topics", () => {
  const forum: Chat.SupergroupChat = { id: -100_777, type: "supergroup", title: "Forum", is_forum: true };
  const topicOpened = (by: User) => message({ chat: forum, message_id: 9, from: by, forum_topic_created: { name: "Plans", icon_color: 0x6fb9f0 } });

  it("makes a topic its own conversation: a message Telegram marks is_topic_message carries its thread id", () => {
    const inTopic = message({ chat: forum, text: "hi", message_thread_id: 9, is_topic_message: true, reply_to_message: topicOpened(alice) as never });
    expect(translateMessage(inTopic, bot, "tg")?.threadId).toBe("9");
  });

  it("keeps General (no thread id on the message) and a reply thread of a group without topics as the group's own conversation", () => {
    expect(translateMessage(message({ chat: forum, text: "hi" }), bot, "tg")).not.toHaveProperty("threadId");
    // Outside forums message_thread_id names the thread of replies a message belongs to, not a topic.
    expect(translateMessage(message({ chat: group, text: "hi", message_thread_id: 40 }), bot, "tg")).not.toHaveProperty("threadId");
    // General is id 1, never named on a send: it stays the group's conversation even if marked.
    expect(translateMessage(message({ chat: forum, text: "hi", message_thread_id: 1, is_topic_message: true }), bot, "tg")).not.toHaveProperty("threadId");
  });

  it("does not read a topic the bot opened as a reply to the bot, but a quote of the bot's message in a topic is", () => {
    const botUser: User = { id: bot.id, is_bot: true, first_name: "Helper", username: bot.username };
    const plain = message({ chat: forum, text: "hi", message_thread_id: 9, is_topic_message: true, reply_to_message: topicOpened(botUser) as never });
    expect(translateMessage(plain, bot, "tg")?.mentioned).toBe(false);
    const quote = message({ chat: forum, message_id: 12, from: botUser, text: "earlier", message_thread_id: 9, is_topic_message: true });
    const reply = message({ chat: forum, text: "and?", message_thread_id: 9, is_topic_message: true, reply_to_message: quote as never });
    expect(translateMessage(reply, bot, "tg")?.mentioned).toBe(true);
  });
});

describe("chatIdOfUpdate", () => {
  it("keys an update by its message's chat, and updates without a message together", () => {
    const update: Update = { update_id: 1, message: message({ chat: group, text: "x" }) as NonNullable<Update["message"]> };
    expect(chatIdOfUpdate(update)).toBe("-100123");
    expect(chatIdOfUpdate({ update_id: 2 })).toBe("other");
  });
});

describe("fileRefsOf", () => {
  it("takes the largest photo size by area, whatever order Telegram lists them in", () => {
    const photo = [
      { file_id: "big", file_unique_id: "b", width: 1280, height: 960, file_size: 90_000 },
      { file_id: "small", file_unique_id: "s", width: 90, height: 67, file_size: 1_000 },
    ];
    expect(fileRefsOf(message({ chat: privateChat, photo }))).toEqual([
      { fileId: "big", size: 90_000, fileName: "photo-42.jpg", kind: "photo", mimeType: "image/jpeg" },
    ]);
  });

  it("makes a document's name safe, and invents one when none is left", () => {
    const named = fileRefsOf(message({ chat: privateChat, document: { file_id: "D", file_unique_id: "d", file_name: "../../etc/.passwd" } }));
    expect(named.map((r) => r.fileName)).toEqual(["passwd"]);
    const unnamed = fileRefsOf(message({ chat: privateChat, document: { file_id: "D", file_unique_id: "d", file_name: "../.." } }));
    expect(unnamed.map((r) => r.fileName)).toEqual(["document-42"]);
  });

  it("names a voice note and gives it Telegram's Ogg type when none is said", () => {
    const refs = fileRefsOf(message({ chat: privateChat, voice: { file_id: "V", file_unique_id: "v", duration: 3 } }));
    expect(refs).toEqual([{ fileId: "V", size: undefined, fileName: "voice-42.ogg", kind: "audio", mimeType: "audio/ogg", seconds: 3 }]);
  });

  it("carries no files for a text message", () => {
    expect(fileRefsOf(message({ chat: privateChat, text: "just words" }))).toEqual([]);
  });
});
