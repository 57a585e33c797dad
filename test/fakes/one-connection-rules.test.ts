/**
 * The platform fakes keep the real platforms' rules for two clients of one
 * account, which several daemons on one config must respect: Telegram ends an
 * overlapped long poll with 409, WhatsApp replaces the older socket of a device
 * with 440, Discord sends every dispatch to every session. Each fake logs who
 * called what, so multi-node tests can assert that owners never overlapped.
 */
import { initAuthCreds } from "@whiskeysockets/baileys";
import { Bot, GrammyError } from "grammy";
import { describe, expect, it, onTestFinished } from "vitest";
import { WebSocket } from "ws";
import type { WhatsAppSocketConfig } from "../../daemon/adapters/whatsapp/index.js";
import { waitUntil } from "../helpers/wait.js";
import { createFakeBaileys, FakeBoom } from "./baileys-socket.js";
import { createFakeDiscord, type FakeDiscord } from "./discord.js";
import { createFakeTelegram, type FakeTelegram } from "./telegram-bot-api.js";

const TOKEN = "123:one-connection";

async function telegram(): Promise<FakeTelegram> {
  const fake = await createFakeTelegram({ token: TOKEN });
  onTestFinished(() => fake.close());
  return fake;
}

describe("Telegram: one getUpdates at a time per token", () => {
  it("a second poll ends the held one with 409, and grammY's polling stops on it", async () => {
    const fake = await telegram();
    const first = new Bot(TOKEN, { client: { apiRoot: fake.url } });
    const stopped = first.start({ timeout: 30, drop_pending_updates: false }).then(
      () => "resolved",
      (error: unknown) => error,
    );
    await waitUntil(() => fake.openPolls() === 1, "grammY's long poll to be held");

    // Another process polls the same token.
    const second = await fetch(`${fake.url}/bot${TOKEN}/getUpdates`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ timeout: 0 }),
    });
    expect(second.status).toBe(200);
    const error = await stopped;
    expect(error).toBeInstanceOf(GrammyError);
    expect(error).toMatchObject({
      error_code: 409,
      description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    });

    const polls = fake.platformCalls().filter((c) => c.call === "getUpdates");
    expect(new Set(polls.map((c) => c.connection)).size).toBe(2);
    expect(polls.every((c, i) => i === 0 || c.at >= (polls[i - 1]?.at ?? 0))).toBe(true);
  });
});

describe("WhatsApp: one live socket per linked device", () => {
  it("opening a second socket closes the first with 440 connectionReplaced, as Baileys reports the conflict stream error", async () => {
    const fake = createFakeBaileys();
    const config: WhatsAppSocketConfig = { auth: { creds: initAuthCreds(), keys: { get: async () => ({}), set: async () => {} } } };
    fake.factory(config);
    const older = fake.latest();
    const closes: unknown[] = [];
    older.ev.on("connection.update", (u) => {
      if (u.connection === "close") closes.push(u.lastDisconnect?.error);
    });
    older.open();
    await older.sendMessage("1@s.whatsapp.net", { text: "from the first" });

    fake.factory(config);
    const newer = fake.latest();
    newer.open();
    expect(closes).toHaveLength(1);
    const error = closes[0];
    expect(error).toBeInstanceOf(FakeBoom);
    expect(error).toMatchObject({ message: "Stream Errored (conflict)", output: { statusCode: 440 }, data: { tag: "conflict", attrs: { type: "replaced" } } });
    await expect(older.sendMessage("1@s.whatsapp.net", { text: "too late" })).rejects.toMatchObject({ output: { statusCode: 428 } });
    await newer.sendMessage("1@s.whatsapp.net", { text: "from the second" });
    expect(fake.alive()).toHaveLength(1);

    expect(fake.platformCalls().map((c) => `${c.connection} ${c.call}`)).toEqual([
      "socket-0 open",
      "socket-0 sendMessage",
      "socket-1 open",
      "socket-1 sendMessage",
    ]);
  });
});

describe("Discord: every session of the bot gets every dispatch", () => {
  async function identify(fake: FakeDiscord): Promise<{ ws: WebSocket; messages: string[] }> {
    const ws = new WebSocket(`${fake.gatewayUrl}/?v=10&encoding=json`);
    const messages: string[] = [];
    ws.on("message", (raw) => {
      const payload = JSON.parse(raw.toString()) as { op: number; t?: string; d?: { content?: string } };
      if (payload.op === 10) ws.send(JSON.stringify({ op: 2, d: { token: "discord-token", intents: 0, properties: {} } }));
      if (payload.t === "MESSAGE_CREATE") messages.push(String(payload.d?.content));
    });
    onTestFinished(async () => ws.close());
    return { ws, messages };
  }

  it("two gateway connections on one token both stay live and both receive MESSAGE_CREATE", async () => {
    const fake = await createFakeDiscord({
      token: "discord-token",
      guilds: [{ id: "100000000000000001", name: "g", channels: [{ id: "200000000000000001", name: "general" }] }],
    });
    onTestFinished(() => fake.close());
    const a = await identify(fake);
    await waitUntil(() => fake.liveSessions() === 1, "the first session");
    const b = await identify(fake);
    await waitUntil(() => fake.liveSessions() === 2, "the second session, the first still live");

    fake.dispatchMessage({
      channelId: "200000000000000001",
      guildId: "100000000000000001",
      author: { id: "300000000000000001", username: "ann" },
      content: "hello both",
    });
    await waitUntil(() => a.messages.length && b.messages.length, "both sessions to receive the message");
    expect([a.messages, b.messages]).toEqual([["hello both"], ["hello both"]]);
    expect(
      fake
        .platformCalls()
        .filter((c) => c.call === "IDENTIFY")
        .map((c) => c.connection),
    ).toEqual(["gateway-1", "gateway-2"]);
  });
});
