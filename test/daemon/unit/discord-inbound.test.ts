/**
 * The Discord adapter's pure rules: who is heard, what text the core gets,
 * how attachments are named. The same rules run end to end in
 * ../discord-adapter.test.ts; these cover the corners, without a gateway.
 */
import { describe, expect, it } from "vitest";
import {
  attachmentKind,
  classifyMessage,
  groupSettingsKey,
  safeFileName,
  stripBotMention,
  translateMessage,
  type BotIdentity,
  type DiscordMessageView,
} from "../../../daemon/adapters/discord/inbound.js";
import { discordChannelSchema } from "../../../daemon/adapters/discord/config.js";

const bot: BotIdentity = { id: "900", name: "relay", roleIds: ["555"] };

const view = (overrides: Partial<DiscordMessageView> = {}): DiscordMessageView => ({
  id: "1",
  channelId: "10",
  guildId: "20",
  parentChannelId: null,
  authorId: "30",
  authorIsBot: false,
  authorName: "alice",
  isSystem: false,
  fromWebhook: false,
  content: "hello",
  createdTimestamp: 0,
  mentionedUserIds: [],
  mentionedRoleIds: [],
  repliedUserId: null,
  attachments: [],
  ...overrides,
});

const config = (extra: Record<string, unknown> = {}) => discordChannelSchema.parse({ type: "discord", token: "t", access: { mode: "open" }, ...extra });

describe("stripBotMention", () => {
  it("removes leading mentions in every form, with the punctuation after them", () => {
    expect(stripBotMention("<@900> hi", bot)).toBe("hi");
    expect(stripBotMention("  <@!900>: hi", bot)).toBe("hi");
    expect(stripBotMention("<@&555>, <@900> hi", bot)).toBe("hi");
    expect(stripBotMention("<@900>", bot)).toBe("");
  });

  it("keeps a mention inside the sentence readable and leaves other people's mentions alone", () => {
    expect(stripBotMention("ask <@900> and <@31>", bot)).toBe("ask @relay and <@31>");
    expect(stripBotMention("<@31> <@900> hi", bot)).toBe("<@31> @relay hi");
  });
});

describe("classifyMessage", () => {
  it("says whether a guild message mentions the bot (the core applies the rule); DMs carry no flag", () => {
    expect(classifyMessage(view(), bot)).toEqual({ kind: "accept", chatType: "group", text: "hello", mentioned: false });
    expect(classifyMessage(view({ guildId: null }), bot)).toEqual({ kind: "accept", chatType: "direct", text: "hello" });
    expect(classifyMessage(view({ content: "<@900> hello", mentionedUserIds: ["900"] }), bot)).toEqual({
      kind: "accept",
      chatType: "group",
      text: "hello",
      mentioned: true,
    });
  });

  it("lets a thread inherit its parent channel's setting, and a channel override its guild's", () => {
    const cfg = config({ access: { mode: "open", groups: { "20": { requireMention: false }, "11": { requireMention: true } } } });
    expect(groupSettingsKey(cfg, view({ channelId: "99", parentChannelId: "11" }))).toBe("11");
  });

  it("drops a bare mention with nothing to say, but not one with a file", () => {
    const bare = view({ content: "<@900>", mentionedUserIds: ["900"] });
    expect(classifyMessage(bare, bot)).toEqual({ kind: "ignore", reason: "empty" });
    const withFile = { ...bare, attachments: [{ id: "5", name: "a.txt", url: "http://x/a.txt", size: 1, contentType: "text/plain" }] };
    expect(classifyMessage(withFile, bot)).toEqual({ kind: "accept", chatType: "group", text: "", mentioned: true });
  });

  it("ignores webhooks and system messages", () => {
    expect(classifyMessage(view({ guildId: null, fromWebhook: true }), bot)).toMatchObject({ reason: "webhook" });
    expect(classifyMessage(view({ guildId: null, isSystem: true }), bot)).toMatchObject({ reason: "system message" });
  });
});

describe("translateMessage", () => {
  const translate = (v: DiscordMessageView, onIgnored?: (reason: string) => void) =>
    translateMessage(v, { bot, accountId: "dc-main", ...(onIgnored ? { onIgnored } : {}) });

  it("turns a DM into the core's message: the channel is the chat, no mention flag, no group aliases", () => {
    const dm = view({ id: "77", channelId: "12", guildId: null, authorId: "31", authorName: "Bob B.", content: "<@900> hi there", createdTimestamp: 1_700 });
    expect(translate(dm)).toEqual({
      platform: "discord",
      accountId: "dc-main",
      chatId: "12",
      chatType: "direct",
      userId: "31",
      userName: "Bob B.",
      messageId: "77",
      text: "hi there",
      sentAt: 1_700,
    });
  });

  it("makes a thread its parent channel's thread, the guild the group alias, and says whether the bot was addressed", () => {
    const inThread = view({ channelId: "99", parentChannelId: "11", guildId: "20", content: "<@&555> status?", mentionedRoleIds: ["555"] });
    expect(translate(inThread)).toMatchObject({ chatId: "11", threadId: "99", chatType: "group", groupAliases: ["20"], text: "status?", mentioned: true });
    // Before the one thread rule the thread was a chat of its own: its stored session moves from there.
    expect(translate(inThread)?.formerly).toEqual({ chatId: "99" });
    expect(translate(view({ content: "just chatting" }))?.threadId).toBeUndefined();
    expect(translate(view({ content: "just chatting" }))).toMatchObject({ chatType: "group", groupAliases: ["20"], mentioned: false });
    expect(translate(view({ content: "thanks", repliedUserId: "900" }))).toMatchObject({ mentioned: true });
  });

  it("leaves attachments to the intake (fetched only once the core admits the message)", () => {
    const withFile = view({ content: "", guildId: null, attachments: [{ id: "5", name: "a.txt", url: "http://x/a.txt", size: 1, contentType: "text/plain" }] });
    const message = translate(withFile);
    expect(message).toMatchObject({ text: "", chatType: "direct" });
    expect(message).not.toHaveProperty("attachments");
  });

  it("drops what the bot must not see, and says why", () => {
    const reasons: string[] = [];
    const dropped = [
      view({ authorId: "900", content: "my own reply" }),
      view({ authorIsBot: true, content: "<@900> ping", mentionedUserIds: ["900"] }),
      view({ fromWebhook: true }),
      view({ isSystem: true }),
      view({ content: "  <@900>  ", mentionedUserIds: ["900"] }),
    ].map((v) => translate(v, (reason) => reasons.push(reason)));
    expect(dropped).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(reasons).toEqual(["own message", "bot author", "webhook", "system message", "empty"]);
  });
});

describe("attachments", () => {
  it("names files safely", () => {
    expect(safeFileName("..\\..\\windows\\evil.exe", "1")).toBe("evil.exe");
    expect(safeFileName("../.hidden", "1")).toBe("hidden");
    expect(safeFileName("a\u0000b\u001f.txt", "1")).toBe("ab.txt");
    expect(safeFileName(null, "42")).toBe("attachment-42");
    expect(safeFileName("..", "42")).toBe("attachment-42");
  });

  it("maps content types to kinds", () => {
    expect(["image/png", "audio/ogg", "video/mp4", "application/pdf", "text/plain", null].map(attachmentKind)).toEqual([
      "photo",
      "audio",
      "video",
      "document",
      "document",
      "other",
    ]);
  });
});
