import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import { ackConfigOf, ackEmojiFor } from "../../../daemon/core/acknowledgement.js";

const KEY = `svc_org_${"0".repeat(64)}`;

/** The ackReaction block through the real schema, so defaults are the shipped ones. */
function ack(raw?: Record<string, unknown>) {
  const channel = { type: "discord", token: "t", ...(raw ? { ackReaction: raw } : {}) };
  const config = ackConfigOf(parseConfig({ service: { apiKey: KEY }, channels: [channel] }, {}).channels[0]);
  if (!config) throw new Error("a Discord channel has ackReaction");
  return config;
}

describe("ackEmojiFor", () => {
  it("defaults to 👀 on group messages that address the bot, none in direct chats", () => {
    const config = ack();
    expect(ackEmojiFor(config, { chatType: "group", mentioned: true })).toBe("👀");
    expect(ackEmojiFor(config, { chatType: "group" })).toBe("👀");
    expect(ackEmojiFor(config, { chatType: "group", mentioned: false })).toBeUndefined();
    expect(ackEmojiFor(config, { chatType: "direct" })).toBeUndefined();
  });

  it("follows the scope, and an empty emoji turns it off", () => {
    expect(ackEmojiFor(ack({ scope: "direct", emoji: "👍" }), { chatType: "direct" })).toBe("👍");
    expect(ackEmojiFor(ack({ scope: "direct" }), { chatType: "group" })).toBeUndefined();
    expect(ackEmojiFor(ack({ scope: "group-all" }), { chatType: "group", mentioned: false })).toBe("👀");
    expect(ackEmojiFor(ack({ scope: "all" }), { chatType: "direct" })).toBe("👀");
    expect(ackEmojiFor(ack({ scope: "off" }), { chatType: "group" })).toBeUndefined();
    expect(ackEmojiFor(ack({ emoji: "" }), { chatType: "group" })).toBeUndefined();
  });

  it("refuses, at load, a Telegram reaction bots may not set", () => {
    const telegram = (ackReaction: Record<string, unknown>) => () =>
      parseConfig({ service: { apiKey: KEY }, channels: [{ type: "telegram", token: `1:${"a".repeat(35)}`, ackReaction }] }, {});
    expect(telegram({ emoji: "🦖" })).toThrow(/ackReaction.*emoji|not a reaction Telegram lets bots set/s);
    expect(telegram({ done: "🦖" })).toThrow(/not a reaction Telegram lets bots set/);
    expect(telegram({ emoji: "👀", done: "👍" })).not.toThrow();
  });
});
