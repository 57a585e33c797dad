import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import type { InboundMessage } from "../../../daemon/vocabulary/adapter.js";
import { resolveRoute, sessionBaseFor, sessionIdFor } from "../../../daemon/core/routing.js";
import { encodeId } from "../../../daemon/vocabulary/keys.js";

const KEY = `svc_org_${"0".repeat(64)}`;
const TG = `1:${"a".repeat(35)}`;

function config(routes: unknown[]) {
  return parseConfig(
    {
      service: { apiKey: KEY, defaultModel: "model-default" },
      routes,
      channels: [{ type: "telegram", id: "bot1", token: TG }, { type: "telegram", id: "bot2", token: TG }, { type: "whatsapp" }],
    },
    {},
  );
}

function msg(over: Partial<InboundMessage>): InboundMessage {
  return {
    platform: "telegram",
    accountId: "bot1",
    chatId: "12345",
    chatType: "direct",
    userId: "12345",
    messageId: "1",
    text: "hi",
    sentAt: 0,
    ...over,
  };
}

describe("resolveRoute", () => {
  const cfg = config([
    { match: { accountId: "bot2" }, instance: "inst-bot2", model: "m2", instructions: "be brief" },
    { match: { platform: "telegram", chatType: "group", chatId: "-100999" }, instance: "inst-team", scope: "group_user" },
    { match: { platform: "whatsapp", userId: "+49 151 1234567" }, instance: "inst-boss" },
    { match: { platform: "telegram", chatType: "group" }, instance: "inst-groups" },
    { match: {}, instance: "inst-default" },
  ]);

  it("takes the first rule that matches", () => {
    expect(resolveRoute(cfg, msg({ accountId: "bot2", chatType: "group", chatId: "-100999" }))).toEqual({
      ruleIndex: 0,
      instanceId: "inst-bot2",
      model: "m2",
      instructions: "be brief",
      scope: "group",
      sessionBase: "telegram.bot2.group.-100999",
    });
    expect(resolveRoute(cfg, msg({ chatType: "group", chatId: "-100999", userId: "42" }))).toEqual({
      ruleIndex: 1,
      instanceId: "inst-team",
      model: "model-default",
      scope: "group_user",
      sessionBase: "telegram.bot1.group.-100999.user.42",
    });
    expect(resolveRoute(cfg, msg({ chatType: "group", chatId: "-100123", userId: "42" }))).toMatchObject({
      ruleIndex: 3,
      scope: "group",
      sessionBase: "telegram.bot1.group.-100123",
    });
    expect(resolveRoute(cfg, msg({}))).toMatchObject({
      ruleIndex: 4,
      instanceId: "inst-default",
      scope: "user",
      sessionBase: "telegram.bot1.dm.12345",
    });
  });

  it("matches userId against aliases and phone spellings", () => {
    const m = msg({ platform: "whatsapp", accountId: "whatsapp", chatId: "x@lid", userId: "777@lid", userAliases: ["491511234567@s.whatsapp.net"] });
    expect(resolveRoute(cfg, m)?.instanceId).toBe("inst-boss");
    expect(resolveRoute(cfg, { ...m, userAliases: [] })?.instanceId).toBe("inst-default");
  });

  it("returns undefined when no rule matches", () => {
    expect(resolveRoute(config([{ match: { platform: "discord" }, instance: "i" }]), msg({}))).toBeUndefined();
    expect(resolveRoute(config([]), msg({}))).toBeUndefined();
  });

  it("keeps direct chats per user whatever the scope, and reads user in a group as per user in it", () => {
    const c = config([{ match: {}, instance: "i", scope: "group" }]);
    expect(resolveRoute(c, msg({ userId: "7", chatId: "7" }))).toMatchObject({ scope: "user", sessionBase: "telegram.bot1.dm.7" });
    const u = config([{ match: {}, instance: "i", scope: "user" }]);
    expect(resolveRoute(u, msg({ chatType: "group", chatId: "-1", userId: "7" }))).toMatchObject({
      scope: "group_user",
      sessionBase: "telegram.bot1.group.-1.user.7",
    });
  });
});

describe("session ids", () => {
  const base = (over: Partial<InboundMessage>, scope: "user" | "group" | "group_user" = "group_user") => sessionBaseFor(msg(over), scope);

  it("depend only on platform, account, chat, user and scope", () => {
    const a = base({ platform: "whatsapp", accountId: "wa", chatType: "direct", userId: "491511234567", messageId: "1", text: "a" });
    const b = base({ platform: "whatsapp", accountId: "wa", chatType: "direct", userId: "491511234567", messageId: "2", text: "b", sentAt: 99 });
    expect(a).toBe(b);
    expect(a).toBe("whatsapp.wa.dm.491511234567");
    expect(base({ accountId: "bot2", chatType: "direct" })).not.toBe(base({ accountId: "bot1", chatType: "direct" }));
  });

  it("give each forum topic its own conversation, and a chat without topics the base it always had", () => {
    const group = { platform: "telegram", accountId: "bot1", chatType: "group" as const, chatId: "-100", userId: "7" };
    expect(base(group, "group")).toBe("telegram.bot1.group.-100");
    expect(base({ ...group, threadId: "5" }, "group")).toBe("telegram.bot1.group.-100.topic.5");
    expect(base({ ...group, threadId: "5" }, "group_user")).toBe("telegram.bot1.group.-100.topic.5.user.7");
    expect(base({ ...group, threadId: "5" }, "group")).not.toBe(base({ ...group, threadId: "6" }, "group"));
    expect(base({ platform: "telegram", accountId: "bot1", chatType: "direct", userId: "7", threadId: "3" })).toBe("telegram.bot1.dm.7.topic.3");
  });

  it("use only safe characters, and hash odd or long ids", () => {
    const ids = ["1203630@g.us", "a.b", "x".repeat(65), "ü", "", "../etc", "a b"];
    for (const id of ids) {
      const s = base({ chatType: "group", chatId: id, userId: id });
      expect(s).toMatch(/^[A-Za-z0-9._:-]+$/);
      expect(encodeId(id)).not.toContain(".");
    }
    expect(encodeId("1203630@g.us")).toMatch(/^1203630_g_us:[A-Za-z0-9_-]{22}$/);
  });

  it("never give two different people or chats the same id", () => {
    const tricky = [
      "42",
      "43",
      "a.user.b",
      "a",
      "user",
      "b",
      "a_b",
      "a.b",
      "a:b",
      "a b",
      "A",
      "-100",
      "100",
      "+100",
      "x".repeat(64),
      "x".repeat(65),
      "x".repeat(66),
      "g1",
      "dm",
      "group",
      "1203630@g.us",
      "1203630_g_us",
    ];
    const seen = new Map<string, string>();
    const add = (key: string, what: string) => {
      expect(seen.get(key), `${what} collides with ${seen.get(key)}`).toBeUndefined();
      seen.set(key, what);
    };
    for (const platform of ["telegram", "tele.gram"]) {
      for (const chat of tricky) {
        add(sessionBaseFor(msg({ platform, chatType: "group", chatId: chat }), "group"), `${platform} group ${chat}`);
        for (const user of tricky) {
          add(sessionBaseFor(msg({ platform, chatType: "group", chatId: chat, userId: user }), "group_user"), `${platform} ${chat}/${user}`);
        }
        for (const topic of ["1", "2", "user", "a.user.b"]) {
          add(sessionBaseFor(msg({ platform, chatType: "group", chatId: chat, threadId: topic }), "group"), `${platform} group ${chat} topic ${topic}`);
          add(
            sessionBaseFor(msg({ platform, chatType: "group", chatId: chat, threadId: topic, userId: "u" }), "group_user"),
            `${platform} ${chat} topic ${topic}/u`,
          );
        }
      }
      for (const user of tricky) add(sessionBaseFor(msg({ platform, chatType: "direct", userId: user }), "user"), `${platform} dm ${user}`);
    }
  });

  it("get a fresh id per generation, and the base for generation 0", () => {
    expect(sessionIdFor("telegram.bot1.dm.1", 0)).toBe("telegram.bot1.dm.1");
    expect(sessionIdFor("telegram.bot1.dm.1", 3)).toBe("telegram.bot1.dm.1.g3");
    expect(sessionIdFor("telegram.bot1.group.-1", 1)).not.toBe(sessionIdFor("telegram.bot1.dm.-1", 1));
    expect(() => sessionIdFor("x", -1)).toThrow(RangeError);
  });
});
