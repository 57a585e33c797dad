/**
 * Message edits on the platform fakes, through the real library clients the
 * daemon uses (grammY's Api, discord.js's REST): what a streaming preview
 * relies on, with Telegram's and Discord's refusals and rate limits.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { Api, GrammyError } from "grammy";
import { DiscordAPIError, REST, Routes } from "discord.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { createFakeDiscord, type FakeDiscord } from "../fakes/discord.js";

async function refusal(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error("expected a refusal");
}

describe("Telegram fake: editMessageText", () => {
  const token = "123:edit-token";
  async function start(): Promise<{ tg: FakeTelegram; api: Api; time: { now: number } }> {
    const time = { now: Date.parse("2026-01-01T00:00:00Z") };
    const tg = await createFakeTelegram({ token, now: () => time.now, editIntervalMs: 1000 });
    onTestFinished(() => tg.close());
    return { tg, api: new Api(token, { apiRoot: tg.url }), time };
  }

  it("edits the bot's message in place and keeps its history with times", async () => {
    const { tg, api, time } = await start();
    const sent = await api.sendMessage(42, "<b>Hel</b>", { parse_mode: "HTML" });
    time.now += 1000;
    const edited = await api.editMessageText(42, sent.message_id, "<b>Hello</b>, world", { parse_mode: "HTML" });
    expect(edited).toMatchObject({ message_id: sent.message_id, text: "Hello, world" });
    const [message] = tg.shownMessages(42);
    expect(message).toMatchObject({ message_id: sent.message_id, text: "<b>Hello</b>, world", parse_mode: "HTML" });
    expect(message!.versions.map((v) => [v.text, v.at - message!.versions[0]!.at])).toEqual([
      ["<b>Hel</b>", 0],
      ["<b>Hello</b>, world", 1000],
    ]);
    expect(tg.edits).toHaveLength(1);
    expect(tg.sentMessages(42)).toHaveLength(1);
  });

  it("refuses as Telegram does: not modified, not found, not the bot's, bad entities, too long", async () => {
    const { tg, api, time } = await start();
    const sent = await api.sendMessage(42, "<b>same</b>", { parse_mode: "HTML" });
    time.now += 5000;
    const same = await refusal(api.editMessageText(42, sent.message_id, "<strong>same</strong>", { parse_mode: "HTML" }));
    expect(same).toBeInstanceOf(GrammyError);
    expect((same as GrammyError).error_code).toBe(400);
    expect((same as GrammyError).description).toMatch(/^Bad Request: message is not modified/);
    expect(((await refusal(api.editMessageText(42, 9999, "x"))) as GrammyError).description).toBe("Bad Request: message to edit not found");
    const userMessage = tg.privateText({ id: 42 }, "mine");
    expect(userMessage).toBeGreaterThan(0);
    const own = tg.sentMessages(42)[0]!.message_id;
    const theirs = own + 1;
    const notBots = await refusal(api.editMessageText(42, theirs, "x"));
    expect((notBots as GrammyError).description).toBe("Bad Request: message can't be edited");
    expect(((await refusal(api.editMessageText(42, own, "<b>open", { parse_mode: "HTML" }))) as GrammyError).description).toMatch(/can't parse entities/);
    expect(((await refusal(api.editMessageText(42, own, "x".repeat(4097)))) as GrammyError).description).toBe("Bad Request: message is too long");
    expect(tg.shownMessages(42)[0]!.versions).toHaveLength(1);
  });

  it("edits faster than the configured rate get 429 with retry_after; later ones pass", async () => {
    const { tg, api, time } = await start();
    const sent = await api.sendMessage(7, "a");
    await api.editMessageText(7, sent.message_id, "ab");
    time.now += 300;
    const tooSoon = await refusal(api.editMessageText(7, sent.message_id, "abc"));
    expect((tooSoon as GrammyError).error_code).toBe(429);
    expect((tooSoon as GrammyError).parameters.retry_after).toBe(1);
    // Another chat has its own budget.
    const other = await api.sendMessage(8, "x");
    await api.editMessageText(8, other.message_id, "xy");
    time.now += 700;
    await api.editMessageText(7, sent.message_id, "abc");
    const versions = tg.shownMessages(7)[0]!.versions;
    expect(versions.map((v) => v.text)).toEqual(["a", "ab", "abc"]);
    expect(versions[2]!.at - versions[1]!.at).toBe(1000);
  });
});

describe("Discord fake: PATCH /channels/{id}/messages/{id}", () => {
  const token = "discord-edit-token";
  const channelId = "300000000000000001";
  async function start(editIntervalMs = 0): Promise<{ dc: FakeDiscord; rest: REST }> {
    const dc = await createFakeDiscord({
      token,
      editIntervalMs,
      guilds: [{ id: "200000000000000001", name: "g", channels: [{ id: channelId, name: "general" }] }],
    });
    onTestFinished(() => dc.close());
    const rest = new REST({ api: dc.apiBase }).setToken(token);
    return { dc, rest };
  }
  const idOf = (message: unknown): string => {
    if (typeof message === "object" && message !== null && "id" in message && typeof message.id === "string") return message.id;
    throw new Error("no id");
  };

  it("edits the bot's message in place, with edited_timestamp and history", async () => {
    const { dc, rest } = await start();
    const id = idOf(await rest.post(Routes.channelMessages(channelId), { body: { content: "Hel" } }));
    const edited = await rest.patch(Routes.channelMessage(channelId, id), { body: { content: "Hello" } });
    expect(edited).toMatchObject({ id, content: "Hello" });
    expect(typeof (edited as { edited_timestamp: unknown }).edited_timestamp).toBe("string");
    expect(dc.shownMessages(channelId).map((m) => m.content)).toEqual(["Hello"]);
    expect(dc.messageVersions(id)!.map((v) => v.content)).toEqual(["Hel", "Hello"]);
    expect(dc.sentMessages(channelId).map((m) => m.content)).toEqual(["Hel"]);
  });

  it("refuses as Discord does: unknown message, empty, over 2000", async () => {
    const { dc, rest } = await start();
    const id = idOf(await rest.post(Routes.channelMessages(channelId), { body: { content: "mine" } }));
    const unknown = await refusal(rest.patch(Routes.channelMessage(channelId, "399999999999999999"), { body: { content: "x" } }));
    expect(unknown).toBeInstanceOf(DiscordAPIError);
    expect((unknown as DiscordAPIError).code).toBe(10008);
    expect(((await refusal(rest.patch(Routes.channelMessage(channelId, id), { body: { content: "" } }))) as DiscordAPIError).code).toBe(50006);
    expect(((await refusal(rest.patch(Routes.channelMessage(channelId, id), { body: { content: "x".repeat(2001) } }))) as DiscordAPIError).code).toBe(50035);
    expect(dc.messageVersions(id)!.map((v) => v.content)).toEqual(["mine"]);
  });

  it("edits faster than the configured rate get a 429 that discord.js waits out and retries", async () => {
    const { dc, rest } = await start(150);
    const limited: number[] = [];
    rest.on("rateLimited", (info) => limited.push(info.retryAfter));
    const id = idOf(await rest.post(Routes.channelMessages(channelId), { body: { content: "1" } }));
    await rest.patch(Routes.channelMessage(channelId, id), { body: { content: "12" } });
    await rest.patch(Routes.channelMessage(channelId, id), { body: { content: "123" } });
    expect(limited.length).toBeGreaterThanOrEqual(1);
    const versions = dc.messageVersions(id)!;
    expect(versions.map((v) => v.content)).toEqual(["1", "12", "123"]);
    expect(versions[2]!.at - versions[1]!.at).toBeGreaterThanOrEqual(150);
  });
});
