/**
 * The pure parts of the Feishu adapter, without HTTP: Feishu's documented
 * decryption example, the signature, what a request is once opened, and the
 * translation of each message type into the core's terms.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decryptFeishuEvent, feishuSignature, verifyFeishuSignature } from "../../daemon/adapters/feishu/crypto.js";
import { openRequest } from "../../daemon/adapters/feishu/events-http.js";
import { resolveMentions, translateMessage, translateTap, type FeishuMessageEvent } from "../../daemon/adapters/feishu/inbound.js";

const BOT = "ou_bot";
const ctx = { botOpenId: BOT, accountId: "fs" };

function event(type: string, content: unknown, over: Partial<FeishuMessageEvent["message"]> = {}, sender = "ou_alice"): FeishuMessageEvent {
  return {
    sender: { sender_id: { open_id: sender }, sender_type: "user" },
    message: {
      message_id: "om_1",
      chat_id: "oc_1",
      chat_type: "p2p",
      message_type: type,
      content: JSON.stringify(content),
      create_time: "1700000000123",
      ...over,
    },
  };
}

describe("crypto", () => {
  it('decrypts Feishu\'s documented example (key "test key") and refuses another key or garbage', () => {
    expect(decryptFeishuEvent("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "test key")).toBe("hello world");
    expect(decryptFeishuEvent("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "another key")).not.toBe("hello world");
    expect(decryptFeishuEvent("bm90IGVuY3J5cHRlZA==", "test key")).toBeUndefined();
  });

  it("signs as SHA-256 over timestamp + nonce + key + raw body, and checks it", () => {
    const body = Buffer.from('{"encrypt":"x"}');
    const expected = createHash("sha256").update(`1700000000nonce1key${body.toString()}`).digest("hex");
    expect(feishuSignature("1700000000", "nonce1", "key", body)).toBe(expected);
    expect(verifyFeishuSignature({ timestamp: "1700000000", nonce: "nonce1", signature: expected, rawBody: body }, "key")).toEqual({ ok: true });
    expect(verifyFeishuSignature({ timestamp: "1700000001", nonce: "nonce1", signature: expected, rawBody: body }, "key")).toEqual({
      ok: false,
      reason: "bad signature",
    });
    expect(verifyFeishuSignature({ timestamp: undefined, nonce: "nonce1", signature: expected, rawBody: body }, "key")).toEqual({
      ok: false,
      reason: "unsigned",
    });
  });

  it("opens an unencrypted v2 event only with the right verification token, and answers a plain challenge", () => {
    const header = (): string | undefined => undefined;
    const envelope = (token: string) =>
      Buffer.from(JSON.stringify({ schema: "2.0", header: { event_id: "e1", event_type: "im.message.receive_v1", token }, event: {} }));
    expect(openRequest({ body: envelope("tok12345"), header }, { verification_token: "tok12345" })).toMatchObject({ kind: "event", input: { eventId: "e1" } });
    expect(openRequest({ body: envelope("other999"), header }, { verification_token: "tok12345" })).toMatchObject({ kind: "refused", status: 401 });
    const challenge = Buffer.from(JSON.stringify({ type: "url_verification", challenge: "c1", token: "tok12345" }));
    expect(openRequest({ body: challenge, header }, { verification_token: "tok12345" })).toEqual({ kind: "challenge", challenge: "c1" });
    expect(openRequest({ body: Buffer.from("not json"), header }, { verification_token: "tok12345" })).toMatchObject({ kind: "refused", status: 400 });
  });
});

describe("translateMessage", () => {
  it("a direct text message: the chat, the sender's open id, the message id, the time", () => {
    const d = translateMessage(event("text", { text: "hello" }), ctx);
    expect(d).toEqual({
      kind: "accept",
      files: [],
      message: {
        platform: "feishu",
        accountId: "fs",
        chatId: "oc_1",
        chatType: "direct",
        userId: "ou_alice",
        messageId: "om_1",
        text: "hello",
        sentAt: 1700000000123,
      },
    });
  });

  it("a group message: addressed only when the bot is mentioned; the bot's mention removed, others named", () => {
    const mentions = [
      { key: "@_user_1", id: { open_id: BOT }, name: "Bot" },
      { key: "@_user_2", id: { open_id: "ou_bob" }, name: "Bob" },
    ];
    const addressed = translateMessage(event("text", { text: "@_user_1 ask @_user_2 please" }, { chat_type: "group", mentions }), ctx);
    expect(addressed).toMatchObject({ kind: "accept", message: { chatType: "group", mentioned: true, text: "ask @Bob please" } });
    const talk = translateMessage(event("text", { text: "hi @_user_2" }, { chat_type: "group", mentions: [mentions[1]!] }), ctx);
    expect(talk).toMatchObject({ kind: "accept", message: { mentioned: false, text: "hi @Bob" } });
    expect(resolveMentions("@_user_1", mentions, BOT)).toBe("");
  });

  it("a thread's message carries its thread; the group stays the chat", () => {
    const d = translateMessage(event("text", { text: "x" }, { chat_type: "group", thread_id: "omt_9", root_id: "om_0" }), ctx);
    expect(d).toMatchObject({ kind: "accept", message: { chatId: "oc_1", threadId: "omt_9" } });
  });

  it("files: an image, a file by its name, a voice message as audio with seconds, a video; a post's text and images", () => {
    expect(translateMessage(event("image", { image_key: "img_1" }), ctx)).toMatchObject({ files: [{ key: "img_1", resource: "image", kind: "photo" }] });
    expect(translateMessage(event("file", { file_key: "f_1", file_name: "../report.pdf" }), ctx)).toMatchObject({
      files: [{ key: "f_1", resource: "file", kind: "document", fileName: "report.pdf" }],
    });
    expect(translateMessage(event("audio", { file_key: "f_2", duration: 3200 }), ctx)).toMatchObject({
      files: [{ key: "f_2", resource: "file", kind: "audio", seconds: 3.2, fileName: "f_2.opus" }],
    });
    expect(translateMessage(event("media", { file_key: "f_3", image_key: "img_2", file_name: "clip.mp4", duration: 1000 }), ctx)).toMatchObject({
      files: [{ key: "f_3", kind: "video", seconds: 1 }],
    });
    const post = {
      title: "Notes",
      content: [
        [
          { tag: "text", text: "see " },
          { tag: "a", text: "this", href: "https://example.com" },
        ],
        [{ tag: "img", image_key: "img_3" }],
      ],
    };
    expect(translateMessage(event("post", post), ctx)).toMatchObject({
      message: { text: "Notes\nsee this (https://example.com)" },
      files: [{ key: "img_3", kind: "photo" }],
    });
  });

  it("is no turn: another app's message, an unreadable one, a sticker, an empty text", () => {
    expect(translateMessage({ ...event("text", { text: "hi" }), sender: { sender_id: { open_id: "ou_app" }, sender_type: "app" } }, ctx)).toEqual({
      kind: "ignore",
      reason: "not a person",
    });
    expect(translateMessage(event("text", "not an object"), ctx)).toEqual({ kind: "ignore", reason: "unreadable" });
    expect(translateMessage(event("sticker", { file_key: "s" }), ctx)).toEqual({ kind: "ignore", reason: "unreadable" });
    expect(translateMessage(event("text", { text: "  " }), ctx)).toEqual({ kind: "ignore", reason: "empty" });
  });
});

describe("translateTap", () => {
  const action = (value: unknown) => ({
    operator: { open_id: "ou_alice" },
    action: { value, tag: "button" },
    context: { open_message_id: "om_q", open_chat_id: "oc_1" },
  });
  it("a button of the bridge's question is the answer, keyed by the callback's event id", () => {
    expect(translateTap(action({ q: "q1", o: 2, t: "g", th: "omt_1" }), { accountId: "fs", eventId: "ev1", nowMs: 5 })).toEqual({
      platform: "feishu",
      accountId: "fs",
      chatId: "oc_1",
      chatType: "group",
      threadId: "omt_1",
      mentioned: true,
      userId: "ou_alice",
      messageId: "tap-ev1",
      text: "2",
      sentAt: 5,
      answers: { questionId: "q1" },
    });
  });
  it("any other button is not the bridge's", () => {
    expect(translateTap(action({ something: "else" }), { accountId: "fs", eventId: "ev1", nowMs: 5 })).toBeUndefined();
    expect(translateTap(action({ q: "q1", o: 0, t: "d" }), { accountId: "fs", eventId: "ev1", nowMs: 5 })).toBeUndefined();
  });
});
