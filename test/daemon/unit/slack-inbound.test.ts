/**
 * The Slack adapter's pure parts: which events are turns and which chat they
 * belong to (inbound.ts), Markdown to mrkdwn (mrkdwn.ts), request signatures
 * (signature.ts) and the scopes a config needs (config.ts).
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { missingScopes, scopesNeeded, slackChannelSchema, slackReactionName } from "../../../daemon/adapters/slack/config.js";
import { conversationOf, placeOf, translateMessage, translateSlashCommand, type SlackMessageEvent } from "../../../daemon/adapters/slack/inbound.js";
import { markdownToMrkdwn } from "../../../daemon/adapters/slack/mrkdwn.js";
import { streamablePart } from "../../../daemon/adapters/streamable.js";
import { SIGNATURE_WINDOW_MS, verifySlackRequest } from "../../../daemon/adapters/slack/signature.js";

const bot = { userId: "U0BOT", botId: "B0BOT", name: "agent" };
const ctx = { bot, accountId: "sl" };
const dm = (extra: Partial<SlackMessageEvent> = {}): SlackMessageEvent => ({
  type: "message",
  user: "U1",
  text: "hello",
  ts: "1700000000.000100",
  channel: "D1",
  channel_type: "im",
  ...extra,
});

describe("translateMessage", () => {
  it("makes a DM a direct chat of its im channel, keyed by ts", () => {
    const d = translateMessage(dm(), ctx);
    expect(d.kind).toBe("accept");
    if (d.kind !== "accept") return;
    expect(d.message).toMatchObject({
      platform: "slack",
      accountId: "sl",
      chatId: "D1",
      chatType: "direct",
      userId: "U1",
      messageId: "1700000000.000100",
      text: "hello",
    });
    expect(d.message.sentAt).toBe(1_700_000_000_000);
  });

  it("makes a DM in a thread (an assistant thread, as @slack/bolt's Assistant reads it) a thread of the DM", () => {
    const d = translateMessage(dm({ ts: "1700000005.000500", thread_ts: "1700000000.000100", text: "in the pane" }), ctx);
    if (d.kind !== "accept") throw new Error("a turn");
    expect(d.message).toMatchObject({ chatId: "D1", chatType: "direct", threadId: "1700000000.000100", messageId: "1700000005.000500" });
    expect(d.message.formerly).toEqual({ chatId: "D1:1700000000.000100", threadId: "1700000000.000100" });
    expect(d.message.groupAliases).toBeUndefined();
    expect(placeOf(d.message)).toEqual({ channel: "D1", threadTs: "1700000000.000100" });
    // The top level of the DM keeps its chat and has no topic.
    const top = translateMessage(dm(), ctx);
    if (top.kind !== "accept") throw new Error("a turn");
    expect(top.message.chatId).toBe("D1");
    expect(top.message.threadId).toBeUndefined();
  });

  it("makes a channel mention its own thread, and a thread reply part of it", () => {
    const top = translateMessage({ type: "app_mention", user: "U1", text: "<@U0BOT> help me", ts: "1700000001.000200", channel: "C1" }, ctx);
    const reply = translateMessage(dm({ channel: "C1", channel_type: "channel", ts: "1700000009.000300", thread_ts: "1700000001.000200", text: "more" }), ctx);
    if (top.kind !== "accept" || reply.kind !== "accept") throw new Error("both are turns");
    expect(top.message).toMatchObject({ chatId: "C1", threadId: "1700000001.000200", startsThread: true, chatType: "group", mentioned: true, text: "help me" });
    expect(reply.message).toMatchObject({ chatId: "C1", threadId: "1700000001.000200", mentioned: false });
    expect(reply.message.startsThread).toBeUndefined();
    // How the shape before the one thread rule named it: its stored session moves from there.
    expect(top.message.formerly).toEqual({ chatId: "C1:1700000001.000200" });
    expect(placeOf(top.message)).toEqual({ channel: "C1", threadTs: "1700000001.000200" });
    // An entry journaled before the upgrade still names the thread in its chat id.
    expect(placeOf({ chatId: "C1:1700000001.000200" })).toEqual({ channel: "C1", threadTs: "1700000001.000200" });
    expect(conversationOf("D1")).toEqual({ channel: "D1" });
  });

  it("counts a follow-up in a thread the bot answers in as addressed", () => {
    const reply = translateMessage(dm({ channel: "C1", channel_type: "channel", thread_ts: "1.0", text: "and then?" }), {
      ...ctx,
      inActiveThread: (chatId) => chatId === "C1:1.0",
    });
    expect(reply.kind === "accept" && reply.message.mentioned).toBe(true);
  });

  it("the message and app_mention copies of one mention land on the same chat and message id", () => {
    const asMessage = translateMessage(dm({ channel: "C1", channel_type: "channel", text: "<@U0BOT> hi" }), ctx);
    const asMention = translateMessage({ type: "app_mention", user: "U1", text: "<@U0BOT> hi", ts: "1700000000.000100", channel: "C1" }, ctx);
    if (asMessage.kind !== "accept" || asMention.kind !== "accept") throw new Error("both are turns");
    expect([asMessage.message.chatId, asMessage.message.messageId, asMessage.message.mentioned]).toEqual([
      asMention.message.chatId,
      asMention.message.messageId,
      asMention.message.mentioned,
    ]);
  });

  it("is no turn for the bot's own messages, other bots, edits, joins and other subtypes", () => {
    const reasons = [
      dm({ user: "U0BOT" }),
      dm({ bot_id: "B0BOT", user: "U9" }),
      dm({ bot_id: "B0OTHER" }),
      dm({ subtype: "message_changed" }),
      dm({ subtype: "message_deleted" }),
      dm({ subtype: "channel_join" }),
      dm({ subtype: "bot_message" }),
      dm({ text: "   " }),
      { type: "reaction_added", user: "U1" },
    ].map((e) => {
      const d = translateMessage(e, ctx);
      return d.kind === "ignore" ? d.reason : "accepted";
    });
    expect(reasons).toEqual(["own message", "own message", "bot author", "subtype", "subtype", "subtype", "subtype", "empty", "not a message"]);
    // A file shared with a message is a turn.
    expect(translateMessage(dm({ subtype: "file_share", text: "", files: [{ id: "F1", name: "a.txt" }] }), ctx).kind).toBe("accept");
  });

  it("reads Slack's escapes and links back into plain text", () => {
    const d = translateMessage(dm({ text: "<@U0BOT> a &lt; b &amp;&amp; c &gt; d <https://x.test|site> <https://y.test> <@U0BOT>" }), ctx);
    expect(d.kind === "accept" && d.message.text).toBe("a < b && c > d site (https://x.test) https://y.test @agent");
  });
});

describe("translateSlashCommand", () => {
  const command = { command: "/agent", text: "approve abcd-efgh", user_id: "U1", channel_id: "D1", trigger_id: "13345224609.738474920.8088930838d88f008e0" };
  it("makes /agent WORDS the bridge's /WORDS, in the DM or the channel it was run in", () => {
    expect(translateSlashCommand(command, ctx, 1_000)).toEqual({
      platform: "slack",
      accountId: "sl",
      chatId: "D1",
      chatType: "direct",
      userId: "U1",
      messageId: "cmd-13345224609.738474920.8088930838d88f008e0",
      text: "/approve abcd-efgh",
      sentAt: 1_000,
    });
    expect(translateSlashCommand({ ...command, channel_id: "C1", text: "/status" }, ctx, 1_000)).toMatchObject({
      chatId: "C1",
      chatType: "group",
      mentioned: true,
      text: "/status",
    });
    expect(translateSlashCommand({ ...command, text: "  " }, ctx, 1_000).text).toBe("/help");
  });
});

describe("markdownToMrkdwn", () => {
  it("renders bold, italics, strike, code, links and lists as mrkdwn", () => {
    expect(markdownToMrkdwn("**bold**, _it_, ~~gone~~, `x<y` and [docs](https://d.test/?a=1&b=2)")).toBe(
      "*bold*, _it_, ~gone~, `x&lt;y` and <https://d.test/?a=1&amp;b=2|docs>",
    );
    expect(markdownToMrkdwn("# Title\n\n- one\n- **two**\n  - deeper\n\n1. a\n2. b")).toBe("*Title*\n\n• one\n• *two*\n    • deeper\n\n1. a\n2. b");
    expect(markdownToMrkdwn("```js\nif (a < b && c) {}\n```")).toBe("```\nif (a &lt; b &amp;&amp; c) {}\n```");
    expect(markdownToMrkdwn("> quoted\n> twice")).toBe("> quoted\n> twice");
  });

  it("escapes &, < and > so agent text cannot mention or link by accident", () => {
    expect(markdownToMrkdwn("<@U123> <!channel> a & b")).toBe("&lt;@U123&gt; &lt;!channel&gt; a &amp; b");
    expect(markdownToMrkdwn("[x](javascript:alert(1))")).toBe("x");
  });
});

describe("streamablePart", () => {
  it("holds back the closing fence the core adds to a preview whose code block is still open, and only that", () => {
    expect(streamablePart("Look:\n\n```ts\nlet a = 1;\n```")).toBe("Look:\n\n```ts\nlet a = 1;");
    // A block the agent closed itself stays whole.
    expect(streamablePart("```ts\nlet a = 1;\n```\n\nthen\n```\nb\n```")).toBe("```ts\nlet a = 1;\n```\n\nthen\n```\nb");
    expect(streamablePart("```\na\n```\n\nplain ```")).toBe("```\na\n```\n\nplain ```");
    expect(streamablePart("no code at all")).toBe("no code at all");
  });
});

describe("verifySlackRequest", () => {
  const secret = "8f742231b10e8888abcd99yyyzzz85a5";
  const body = Buffer.from('{"type":"event_callback","event_id":"Ev1"}');
  const now = 1_700_000_000_000;
  const sign = (ts: string, raw: Buffer, key = secret) => `v0=${createHmac("sha256", key).update(`v0:${ts}:${raw.toString()}`).digest("hex")}`;
  const ts = String(now / 1000);

  it("accepts Slack's v0 signature over the raw body", () => {
    expect(verifySlackRequest({ timestamp: ts, signature: sign(ts, body), rawBody: body }, secret, now)).toEqual({ ok: true });
  });

  it("refuses another secret, another body, a stale or future timestamp, and missing headers", () => {
    const verdict = (r: Parameters<typeof verifySlackRequest>[0], at = now) => {
      const v = verifySlackRequest(r, secret, at);
      return v.ok ? "ok" : v.reason;
    };
    expect(verdict({ timestamp: ts, signature: sign(ts, body, "another-secret-0000000"), rawBody: body })).toBe("bad signature");
    // Re-serialised JSON is other bytes: the signature is over what was sent.
    expect(verdict({ timestamp: ts, signature: sign(ts, body), rawBody: Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1)) })).toBe(
      "bad signature",
    );
    expect(verdict({ timestamp: ts, signature: sign(ts, body), rawBody: body }, now + SIGNATURE_WINDOW_MS + 1000)).toBe("stale timestamp");
    expect(verdict({ timestamp: ts, signature: sign(ts, body), rawBody: body }, now - SIGNATURE_WINDOW_MS - 1000)).toBe("stale timestamp");
    expect(verdict({ timestamp: undefined, signature: sign(ts, body), rawBody: body })).toBe("missing headers");
    expect(verdict({ timestamp: ts, signature: "v0=short", rawBody: body })).toBe("bad signature");
  });
});

describe("config", () => {
  const base = { type: "slack", botToken: "xoxb-1-2-abc", signingSecret: "0123456789abcdef0123" };

  it("needs the signing secret over HTTP and the app token in Socket Mode", () => {
    expect(slackChannelSchema.safeParse(base).success).toBe(true);
    expect(slackChannelSchema.safeParse({ ...base, signingSecret: undefined }).error?.issues.map((i) => i.path.join("."))).toEqual(["signingSecret"]);
    expect(slackChannelSchema.safeParse({ ...base, mode: "socket" }).error?.issues.map((i) => i.path.join("."))).toEqual(["appToken"]);
    expect(slackChannelSchema.safeParse({ ...base, mode: "socket", appToken: "xapp-1-A1-1-abc" }).success).toBe(true);
    expect(slackChannelSchema.safeParse({ ...base, botToken: "xapp-1-oops" }).success).toBe(false);
  });

  it("names reactions the Slack way, and refuses one it cannot name", () => {
    expect(slackReactionName("👀")).toBe("eyes");
    expect(slackReactionName("✅")).toBe("white_check_mark");
    expect(slackChannelSchema.safeParse({ ...base, ackReaction: { emoji: "🦜" } }).success).toBe(false);
  });

  it("asks for the scopes the config's features use, required first", () => {
    const config = slackChannelSchema.parse({ ...base, access: { groups: { C1: {} } } });
    const needs = scopesNeeded(config);
    expect(needs.filter((n) => n.required).map((n) => n.scope)).toEqual(["chat:write", "im:history", "app_mentions:read", "channels:history"]);
    const missing = missingScopes(needs, ["chat:write", "im:history", "reactions:write", "files:read", "files:write", "assistant:write", "groups:history"]);
    expect(missing.map((m) => [m.scope, m.required])).toEqual([
      ["app_mentions:read", true],
      ["channels:history", true],
    ]);
    // DMs only: no channel scopes.
    expect(scopesNeeded(slackChannelSchema.parse(base)).map((n) => n.scope)).not.toContain("app_mentions:read");
  });
});
