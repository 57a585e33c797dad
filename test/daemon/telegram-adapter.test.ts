/**
 * The Telegram adapter with grammY's real HTTP client against the local fake
 * Bot API: what reaches the core, in what order, when the offset advances,
 * how replies are rendered, and that flood limits delay without losing.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { daemonConfigSchema, type TelegramChannelConfig } from "../../daemon/config/schema.js";
import type { AdapterStateStore, ChatAdapter, InboundMessage, InboundSink } from "../../daemon/core/adapter.js";
import { createTelegramAdapter, telegramMarkdownToHtml } from "../../daemon/adapters/telegram/index.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeTelegram, parseTelegramHtml, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { deadPort } from "../helpers/emulator.js";

const TOKEN = "123456789:AAAbbbCCCdddEEEfffGGGhhhIIIjjjKKKll";
const alice = { id: 111, username: "alice" };
const bob = { id: 222, username: "bob" };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function memoryState(initial: Record<string, unknown> = {}): AdapterStateStore & { data: Record<string, unknown> } {
  const data = { ...initial };
  return { data, get: <T>(k: string) => data[k] as T | undefined, set: async (k, v) => void (data[k] = v) };
}

function channelConfig(fake: FakeTelegram, extra: Record<string, unknown> = {}): TelegramChannelConfig {
  const config = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    routes: [{ instance: "i" }],
    channels: [{ type: "telegram", id: "tg", token: TOKEN, apiRoot: fake.url, access: { mode: "open" }, ...extra }],
  });
  return config.channels[0] as TelegramChannelConfig;
}

interface Harness {
  fake: FakeTelegram;
  adapter: ChatAdapter;
  accepted: InboundMessage[];
  state: ReturnType<typeof memoryState>;
  logs: string[];
  sink: InboundSink & { refuse: boolean };
}

async function start(options: { fake?: FakeTelegram; state?: ReturnType<typeof memoryState>; extra?: Record<string, unknown>; acceptDelay?: (m: InboundMessage) => number } = {}): Promise<Harness> {
  const fake = options.fake ?? (await createFakeTelegram({ token: TOKEN }));
  if (!options.fake) cleanups.push(() => fake.close());
  const logs: string[] = [];
  const logger = pino({ level: "trace" }, new Writable({ write: (chunk, _e, cb) => (logs.push(String(chunk)), cb()) }));
  const state = options.state ?? memoryState();
  const accepted: InboundMessage[] = [];
  const sink: InboundSink & { refuse: boolean } = {
    refuse: false,
    async accept(message) {
      if (sink.refuse) throw new Error("journal unavailable");
      const delay = options.acceptDelay?.(message) ?? 0;
      if (delay) await new Promise((r) => setTimeout(r, delay));
      accepted.push(message);
    },
    status: () => {},
  };
  const adapter = createTelegramAdapter(channelConfig(fake, options.extra), { logger, state, dataDir: "/nonexistent", clock: systemClock, maxAttachmentBytes: 1024 * 1024 }, { pollTimeoutSeconds: 1, retryPauseMs: 20, maxRetryDelaySeconds: 2 });
  await adapter.start(sink);
  cleanups.push(() => adapter.stop());
  return { fake, adapter, accepted, state, logs, sink };
}

describe("intake", () => {
  it("turns a private message into an InboundMessage with Telegram's ids", async () => {
    const { fake, accepted } = await start();
    fake.privateText(alice, "hello there");
    const [msg] = await fake.waitFor(() => accepted.length > 0 && accepted);
    expect(msg).toMatchObject({ platform: "telegram", accountId: "tg", chatId: "111", chatType: "direct", userId: "111", userName: "alice", text: "hello there" });
    expect(msg!.messageId).toMatch(/^\d+$/);
    expect(fake.commands).toHaveLength(1); // the command menu was set
  });

  it("keeps order within a chat while another chat's slow message is in flight", async () => {
    const { fake, accepted } = await start({ acceptDelay: (m) => (m.userId === "111" && m.text === "a1" ? 150 : 0) });
    fake.privateText(alice, "a1");
    fake.privateText(bob, "b1");
    fake.privateText(alice, "a2");
    fake.privateText(alice, "a3");
    await fake.waitFor(() => accepted.length === 4);
    expect(accepted.filter((m) => m.userId === "111").map((m) => m.text)).toEqual(["a1", "a2", "a3"]);
    // Bob did not wait for Alice's slow first message.
    expect(accepted.findIndex((m) => m.text === "b1")).toBeLessThan(accepted.findIndex((m) => m.text === "a1"));
  });

  it("persists the offset only after accept, and a restart neither replays nor skips", async () => {
    const fake = await createFakeTelegram({ token: TOKEN });
    cleanups.push(() => fake.close());
    const state = memoryState();
    const first = await start({ fake, state });
    const id1 = fake.privateText(alice, "one");
    const id2 = fake.privateText(alice, "two");
    await fake.waitFor(() => first.accepted.length === 2);
    await fake.waitFor(() => state.data.lastUpdateId === id2);
    await first.adapter.stop();

    const id3 = fake.privateText(alice, "three"); // arrives while the bridge is down
    const second = await start({ fake, state });
    await fake.waitFor(() => second.accepted.length === 1);
    await fake.waitFor(() => state.data.lastUpdateId === id3);
    expect(second.accepted.map((m) => m.text)).toEqual(["three"]);
    expect(id1).toBeLessThan(id2);
  });

  it("does not advance past an update the core refused; it comes again", async () => {
    const { fake, accepted, state, sink } = await start();
    sink.refuse = true;
    const id = fake.privateText(alice, "important");
    await fake.waitFor(() => fake.offsets.length >= 3);
    expect(state.data.lastUpdateId).toBeUndefined();
    sink.refuse = false;
    await fake.waitFor(() => accepted.length === 1);
    await fake.waitFor(() => state.data.lastUpdateId === id);
    expect(accepted[0]!.text).toBe("important");
  });

  it("answers in groups only when mentioned or replied to, with the mention stripped", async () => {
    const { fake, accepted } = await start();
    fake.groupText(-100, alice, "chatter among people");
    fake.groupText(-100, alice, "what is up?", { mention: true });
    fake.groupText(-100, bob, "and you?", { replyToBot: true });
    fake.groupText(-100, alice, `/new@${fake.bot.username}`);
    await fake.waitFor(() => accepted.length === 3);
    await new Promise((r) => setTimeout(r, 50));
    expect(accepted.map((m) => [m.chatType, m.chatId, m.text])).toEqual([
      ["group", "-100", "what is up?"],
      ["group", "-100", "and you?"],
      ["group", "-100", "/new"],
    ]);
  });

  it("accepts every group message when mention gating is off", async () => {
    const { fake, accepted } = await start({ extra: { requireMention: false } });
    fake.groupText(-100, alice, "chatter");
    await fake.waitFor(() => accepted.length === 1);
    expect(accepted[0]!.text).toBe("chatter");
  });

  it("downloads a document into the message's attachments", async () => {
    const { fake, accepted } = await start();
    fake.document(alice, "notes.txt", Buffer.from("file body"), "see attached");
    const [msg] = await fake.waitFor(() => accepted.length > 0 && accepted);
    expect(msg!.text).toBe("see attached");
    expect(msg!.attachments?.[0]).toMatchObject({ kind: "document", fileName: "notes.txt" });
    expect(msg!.attachments?.[0]!.data.toString()).toBe("file body");
  });
});

describe("webhook mode", () => {
  it("registers the webhook with its secret, refuses forged posts, and answers 200 only once accepted", async () => {
    const port = await deadPort();
    const secretToken = "s3cret-token_for-tests";
    const { fake, accepted, sink } = await start({ extra: { mode: "webhook", webhook: { url: "https://bridge.example/telegram", host: "127.0.0.1", port, path: "/telegram", secretToken } } });
    expect(fake.webhook).toEqual({ url: "https://bridge.example/telegram", secret_token: secretToken });
    const post = (body: unknown, secret?: string) =>
      fetch(`http://127.0.0.1:${port}/telegram`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(secret ? { "x-telegram-bot-api-secret-token": secret } : {}) },
        body: JSON.stringify(body),
      });
    const update = (id: number, text: string) => ({
      update_id: id,
      message: { message_id: id, date: 1, chat: { id: 111, type: "private" }, from: { id: 111, is_bot: false, first_name: "alice" }, text },
    });
    expect((await post(update(1, "forged"), "wrong")).status).toBe(401);
    expect((await post(update(2, "no secret"))).status).toBe(401);
    sink.refuse = true;
    expect((await post(update(3, "refused"), secretToken)).status).toBe(503); // Telegram will deliver it again
    sink.refuse = false;
    expect((await post(update(3, "refused"), secretToken)).status).toBe(200);
    expect((await post(update(4, "hello"), secretToken)).status).toBe(200);
    expect(accepted.map((m) => m.text)).toEqual(["refused", "hello"]);
  });
});

describe("replies", () => {
  const target = { platform: "telegram", accountId: "tg", chatId: "111", chatType: "direct" as const };

  it("renders Markdown as Telegram HTML", async () => {
    const { fake, adapter } = await start();
    await adapter.send(target, "**bold** and `a < b` and\n\n```ts\nlet x = 1 && 2;\n```", { format: "markdown" });
    const [sent] = fake.sentMessages(111);
    expect(sent!.parse_mode).toBe("HTML");
    expect(sent!.text).toBe('<b>bold</b> and <code>a &lt; b</code> and\n\n<pre><code class="language-ts">let x = 1 &amp;&amp; 2;</code></pre>');
  });

  it("falls back to plain text when Telegram rejects the entities", async () => {
    const { fake, adapter } = await start();
    fake.rejectHtml(1);
    await adapter.send(target, "**still** delivered", { format: "markdown" });
    expect(fake.sentMessages(111)).toEqual([expect.objectContaining({ text: "**still** delivered" })]);
    expect(fake.sentMessages(111)[0]!.parse_mode).toBeUndefined();
  });

  it("a 429 with retry_after delays the reply but delivers it", async () => {
    const { fake, adapter } = await start();
    fake.inject429("sendMessage", 1, 1);
    await adapter.send(target, "after the flood", { format: "plain" });
    expect(fake.sentMessages(111).map((m) => m.text)).toEqual(["after the flood"]);
  });

  it("typing failures never throw", async () => {
    const { fake, adapter } = await start();
    await adapter.sendTyping(target);
    expect(fake.chatActions).toEqual([{ chat_id: "111", action: "typing" }]);
    await fake.close();
    await expect(adapter.sendTyping(target)).resolves.toBeUndefined();
  });

  it("never writes the bot token to the logs", async () => {
    const { fake, adapter, logs } = await start();
    await fake.close(); // polls and sends now fail and get logged
    await expect(adapter.send(target, "x", { format: "plain" })).rejects.toThrow(/telegram sendMessage failed/);
    await new Promise((r) => setTimeout(r, 100));
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join("\n")).not.toContain(TOKEN);
    expect(logs.join("\n")).not.toContain(TOKEN.split(":")[1]);
  });
});

describe("telegramMarkdownToHtml", () => {
  it("escapes text once and keeps Telegram's tags balanced", () => {
    for (const md of ["a < b & c > d", "*it* **b** ~~s~~", "# Title\n\n- one\n- two\n\n1. x\n2. y", "> quoted **b**", "```\n<raw>\n```", "[link](https://x.example/?a=1&b=2)"]) {
      expect(() => parseTelegramHtml(telegramMarkdownToHtml(md))).not.toThrow();
    }
    expect(telegramMarkdownToHtml("a < b & c")).toBe("a &lt; b &amp; c");
    expect(telegramMarkdownToHtml("# Title")).toBe("<b>Title</b>");
    expect(telegramMarkdownToHtml("- one\n- two")).toBe("• one\n• two");
    expect(telegramMarkdownToHtml("[l](https://x.example/?a=1&b=2)")).toBe('<a href="https://x.example/?a=1&amp;b=2">l</a>');
  });
});
