import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import type { AccessConfig } from "../../../daemon/config/schema.js";
import { checkAccess, groupRequiresMention, normalizeUserId } from "../../../daemon/core/access.js";
import { translateMessage as slackMessage } from "../../../daemon/adapters/slack/inbound.js";
import { translateMessage as teamsMessage } from "../../../daemon/adapters/teams/inbound.js";
import { translateMessage as telegramMessage } from "../../../daemon/adapters/telegram/inbound.js";
import type { InboundMessage } from "../../../daemon/vocabulary/adapter.js";

const KEY = `svc_org_${"0".repeat(64)}`;

/** Access blocks go through the real schema, so defaults are the shipped ones. */
function access(raw: Record<string, unknown>): AccessConfig {
  const cfg = parseConfig({ service: { apiKey: KEY }, channels: [{ type: "whatsapp", access: raw }] }, {});
  return cfg.channels[0]!.access;
}

function msg(over: Partial<InboundMessage>): InboundMessage {
  return {
    platform: "whatsapp",
    accountId: "whatsapp",
    chatId: "chat",
    chatType: "direct",
    userId: "u1",
    messageId: "m1",
    text: "hi",
    sentAt: 0,
    ...over,
  };
}

describe("normalizeUserId", () => {
  it("gives one spelling per WhatsApp person", () => {
    for (const id of [
      "+49 151 1234567",
      "49 151 1234567",
      "+49-151-123-4567",
      "491511234567@s.whatsapp.net",
      "491511234567:12@s.whatsapp.net",
      "491511234567@c.us",
    ]) {
      expect(normalizeUserId(id)).toBe("491511234567");
    }
  });

  it("keeps @lid ids apart from phone numbers, minus any device", () => {
    expect(normalizeUserId("12345@lid")).toBe("12345@lid");
    expect(normalizeUserId("12345:3@lid")).toBe("12345@lid");
    expect(normalizeUserId("12345@lid")).not.toBe(normalizeUserId("+12345"));
  });

  it("leaves other platforms' ids alone", () => {
    expect(normalizeUserId("123456789012345678")).toBe("123456789012345678");
    expect(normalizeUserId("-100123")).toBe("-100123");
    expect(normalizeUserId("local")).toBe("local");
  });
});

describe("checkAccess in direct chats", () => {
  it("fails closed: the default allowlist admits nobody", () => {
    expect(checkAccess(access({}), msg({}))).toEqual({ allowed: false, reason: "user not in allowlist" });
  });

  it("admits listed users only", () => {
    const a = access({ users: ["u1", 42] });
    expect(checkAccess(a, msg({ userId: "u1" })).allowed).toBe(true);
    expect(checkAccess(a, msg({ userId: "42" })).allowed).toBe(true);
    expect(checkAccess(a, msg({ userId: "u2" })).allowed).toBe(false);
  });

  it("matches a phone number against the sender's aliases, however written", () => {
    const a = access({ users: ["+49 151 1234567"] });
    expect(checkAccess(a, msg({ userId: "99999@lid", userAliases: ["491511234567@s.whatsapp.net"] })).allowed).toBe(true);
    expect(checkAccess(a, msg({ userId: "491511234567:4@s.whatsapp.net" })).allowed).toBe(true);
    expect(checkAccess(a, msg({ userId: "99999@lid", userAliases: ["491511234568@s.whatsapp.net"] })).allowed).toBe(false);
    // A @lid id with the same digits is somebody else.
    expect(checkAccess(a, msg({ userId: "491511234567@lid" })).allowed).toBe(false);
  });

  it("matches @lid entries", () => {
    const a = access({ users: ["777@lid"] });
    expect(checkAccess(a, msg({ userId: "+4900", userAliases: ["777@lid"] })).allowed).toBe(true);
  });

  it("admits everyone in open mode, and anyone with a * entry", () => {
    expect(checkAccess(access({ mode: "open" }), msg({ userId: "stranger" })).allowed).toBe(true);
    expect(checkAccess(access({ users: ["*"] }), msg({ userId: "stranger" })).allowed).toBe(true);
  });
});

describe("checkAccess in groups", () => {
  const group = (over: Partial<InboundMessage> = {}) => msg({ chatType: "group", chatId: "g1", ...over });

  it("refuses unlisted groups, even for allowlisted users", () => {
    expect(checkAccess(access({ users: ["u1"] }), group())).toEqual({ allowed: false, reason: "group not in allowlist" });
  });

  it("admits channel-wide users in a listed group without its own list", () => {
    const a = access({ users: ["u1"], groups: { g1: {} } });
    expect(checkAccess(a, group({ userId: "u1" })).allowed).toBe(true);
    expect(checkAccess(a, group({ userId: "u2" }))).toEqual({ allowed: false, reason: "user not in allowlist" });
  });

  it("lets a group's own list replace the channel-wide one there", () => {
    const a = access({ users: ["u1"], groups: { g1: { users: ["u2"] } } });
    expect(checkAccess(a, group({ userId: "u2" })).allowed).toBe(true);
    expect(checkAccess(a, group({ userId: "u1" }))).toEqual({ allowed: false, reason: "user not in group allowlist" });
    // ...only in that group: u2 is still a stranger in a direct chat.
    expect(checkAccess(a, msg({ userId: "u2" })).allowed).toBe(false);
  });

  it("refuses a disabled group, even in open mode", () => {
    const a = access({ mode: "open", users: ["u1"], groups: { g1: { enabled: false } } });
    expect(checkAccess(a, group({ userId: "u1" }))).toEqual({ allowed: false, reason: "group disabled" });
    expect(checkAccess(a, group({ chatId: "g2" })).allowed).toBe(true);
  });

  it("admits unlisted groups with allowUnlistedGroups, for allowlisted users only", () => {
    const a = access({ users: ["u1"], allowUnlistedGroups: true });
    expect(checkAccess(a, group({ chatId: "any", userId: "u1" })).allowed).toBe(true);
    expect(checkAccess(a, group({ chatId: "any", userId: "u2" })).allowed).toBe(false);
  });

  it("applies a group's list in open mode too", () => {
    const a = access({ mode: "open", groups: { g1: { users: ["u1"] } } });
    expect(checkAccess(a, group({ userId: "u2" })).allowed).toBe(false);
    expect(checkAccess(a, group({ userId: "u1" })).allowed).toBe(true);
  });

  it("does not treat inherited object keys as listed groups", () => {
    const a = access({ users: ["u1"] });
    expect(checkAccess(a, group({ chatId: "constructor", userId: "u1" })).allowed).toBe(false);
    expect(checkAccess(a, group({ chatId: "__proto__", userId: "u1" })).allowed).toBe(false);
  });
});

describe("groupRequiresMention", () => {
  it("uses the group's setting, then the channel's", () => {
    const cfg = parseConfig(
      {
        service: { apiKey: KEY },
        channels: [
          { type: "telegram", token: `1:${"a".repeat(35)}`, access: { groups: { quiet: { requireMention: false } } } },
          { type: "discord", token: "t", requireMention: false, access: { groups: { loud: { requireMention: true } } } },
          { type: "terminal" },
        ],
      },
      {},
    );
    const [tg, dc, term] = cfg.channels;
    expect(groupRequiresMention(tg!, "quiet")).toBe(false);
    expect(groupRequiresMention(tg!, "other")).toBe(true);
    expect(groupRequiresMention(dc!, "loud")).toBe(true);
    expect(groupRequiresMention(dc!, "other")).toBe(false);
    expect(groupRequiresMention(term!, "x")).toBe(false);
  });
});

describe("group aliases", () => {
  it("applies settings keyed by a broader id (a guild) when the chat itself is not listed, the chat's own first", () => {
    const a = access({ users: ["u1"], groups: { guild: { users: ["u2"] }, "special-channel": { enabled: false } } });
    const inGuild = (chatId: string, userId: string) => checkAccess(a, msg({ chatType: "group", chatId, userId, groupAliases: ["parent", "guild"] }));
    expect(inGuild("some-channel", "u2").allowed).toBe(true);
    expect(inGuild("some-channel", "u1").allowed).toBe(false); // the guild's list replaces the channel-wide one
    expect(inGuild("special-channel", "u2").allowed).toBe(false); // the chat's own entry wins
    expect(checkAccess(a, msg({ chatType: "group", chatId: "other", userId: "u2" })).allowed).toBe(false);
  });
});

describe("a thread listed by the id it had before the one thread rule", () => {
  // Before the rule /whoami in a Slack thread showed the chat `C123:<ts>`, in a Teams reply chain
  // `<channel>;messageid=<root>`; an operator who listed that id (here: to turn the bot off there)
  // must not find the bot answering in it after the upgrade.
  const a = access({
    users: ["U1", "aad-u1"],
    allowUnlistedGroups: true,
    groups: { "C123:1700000000.000100": { enabled: false }, "19:ch@thread.tacv2;messageid=1700000000001": { enabled: false } },
  });

  it("Slack: a thread listed as <channel>:<ts> keeps its settings", () => {
    const bot = { userId: "U0BOT", name: "bridge" };
    const event = {
      type: "message",
      channel: "C123",
      channel_type: "channel",
      user: "U1",
      text: "<@U0BOT> hi",
      ts: "1700000000.000200",
      thread_ts: "1700000000.000100",
    };
    const t = slackMessage(event, { accountId: "sl", bot });
    if (t.kind !== "accept") throw new Error("not taken");
    expect(checkAccess(a, t.message)).toEqual({ allowed: false, reason: "group disabled" });
    const elsewhere = slackMessage({ ...event, thread_ts: "1700000000.000300" }, { accountId: "sl", bot });
    if (elsewhere.kind !== "accept") throw new Error("not taken");
    expect(checkAccess(a, elsewhere.message).allowed).toBe(true);
  });

  it("Teams: a reply chain listed by its conversation id keeps its settings", () => {
    const activity = {
      type: "message",
      id: "1700000000002",
      conversation: { id: "19:ch@thread.tacv2;messageid=1700000000001", conversationType: "channel" },
      from: { id: "29:u1", aadObjectId: "aad-u1" },
      recipient: { id: "28:bot" },
      text: "hi",
      channelData: { channel: { id: "19:ch@thread.tacv2" }, team: { id: "team-1" } },
    };
    const t = teamsMessage(activity, "tm");
    if (!("message" in t)) throw new Error("not taken");
    expect(checkAccess(a, t.message)).toEqual({ allowed: false, reason: "group disabled" });
  });
});

describe("a thread listed by its own id", () => {
  // A Telegram topic's id is a message id, unique only inside its chat ("Unique message identifier
  // inside this chat", Bot API): topic 7 exists in many forums. A listing meant for one forum's
  // topic must not reach the same topic id of another forum, least of all one the bridge does not serve.
  const topicMessage = (chatId: number, topic: number, userId = 5001) =>
    telegramMessage(
      {
        message_id: 100,
        date: 1700000000,
        chat: { id: chatId, type: "supergroup", title: "Forum", is_forum: true },
        from: { id: userId, is_bot: false, first_name: "A", username: "a" },
        message_thread_id: topic,
        is_topic_message: true,
        text: "@bridge_bot hi",
        entities: [{ type: "mention", offset: 0, length: 11 }],
      } as Parameters<typeof telegramMessage>[0],
      { id: 900, username: "bridge_bot" },
      "tg",
    );
  const served = -1001111;
  const unlisted = -1002222;

  it("a Telegram topic listed as <chat>:<topic> has its settings there alone: the same topic id of an unlisted forum is not served", () => {
    const a = access({ users: ["5001", "5002"], groups: { [String(served)]: {}, [`${served}:7`]: { users: ["5002"] } } });
    const inServed = topicMessage(served, 7, 5002);
    const elsewhere = topicMessage(unlisted, 7, 5002);
    if (!inServed || !elsewhere) throw new Error("not taken");
    expect(checkAccess(a, inServed).allowed).toBe(true);
    // The topic's own list replaces the channel-wide one in it.
    expect(checkAccess(a, topicMessage(served, 7, 5001) ?? inServed)).toEqual({ allowed: false, reason: "user not in group allowlist" });
    expect(checkAccess(a, elsewhere)).toEqual({ allowed: false, reason: "group not in allowlist" });
  });

  it("a bare topic id listed does not let the same topic of an unlisted forum in", () => {
    const a = access({ users: ["5001"], groups: { [String(served)]: {}, "7": { requireMention: false } } });
    const elsewhere = topicMessage(unlisted, 7);
    if (!elsewhere) throw new Error("not taken");
    expect(checkAccess(a, elsewhere)).toEqual({ allowed: false, reason: "group not in allowlist" });
  });

  it("a Discord thread listed by its own channel id (what /whoami showed in it before the one thread rule) keeps its settings", () => {
    const a = access({ users: ["u1"], groups: { "1300000000000000077": { enabled: false } } });
    const inThread = msg({
      platform: "discord",
      chatType: "group",
      chatId: "1300000000000000001",
      threadId: "1300000000000000077",
      formerly: { chatId: "1300000000000000077" },
    });
    expect(checkAccess(a, inThread)).toEqual({ allowed: false, reason: "group disabled" });
  });
});
