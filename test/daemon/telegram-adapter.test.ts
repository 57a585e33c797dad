/**
 * The Telegram adapter with grammY's real HTTP client against the local fake
 * Bot API: what reaches the core, in what order, when the offset advances,
 * how replies are rendered, and that flood limits delay without losing.
 */
import { Writable } from "node:stream";
import { inspect } from "node:util";
import pino from "pino";
import { describe, expect, it, onTestFinished } from "vitest";
import type { TelegramChannelConfig } from "../../daemon/adapters/telegram/config.js";
import { daemonConfigSchema } from "../../daemon/config/schema.js";
import type { AdapterStateStore, AdapterStatusEvent, ChatAdapter, ChatTarget, InboundMessage, InboundSink } from "../../daemon/vocabulary/adapter.js";
import { createTelegramAdapter, TelegramAdapterError, telegramMarkdownToHtml, type TelegramAdapterOptions } from "../../daemon/adapters/telegram/index.js";
import { SendError } from "../../daemon/vocabulary/adapter.js";
import { ACCEPTED, admitUpTo } from "../fakes/sink.js";
import { createManualClock, sleepOn, systemClock, type Clock } from "../../shared/clock.js";
import { createFakeTelegram, parseTelegramHtml, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { deadPort } from "../helpers/emulator.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const TOKEN_SECRET_PART = TELEGRAM_BOT_TOKEN.split(":")[1]!;
const alice = { id: 111, username: "alice" };
const bob = { id: 222, username: "bob" };
const GROUP = -100;

function memoryState(initial: Record<string, unknown> = {}): AdapterStateStore & { data: Record<string, unknown> } {
  const data = { ...initial };
  return {
    data,
    get: <T>(k: string) => data[k] as T | undefined,
    set: async (k, v) => {
      data[k] = v;
    },
  };
}

function channelConfig(apiRoot: string, extra: Record<string, unknown> = {}, token = TELEGRAM_BOT_TOKEN): TelegramChannelConfig {
  const config = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    routes: [{ instance: "i" }],
    channels: [{ type: "telegram", id: "tg", token, apiRoot, access: { mode: "open" }, ...extra }],
  });
  return config.channels[0] as TelegramChannelConfig;
}

interface StartOptions {
  fake?: FakeTelegram;
  clock?: Clock;
  /** Point the adapter here instead of the fake (an API that is not up yet). */
  apiRoot?: string;
  token?: string;
  state?: ReturnType<typeof memoryState>;
  extra?: Record<string, unknown>;
  /** Awaited inside accept before the message counts as accepted. */
  gate?: (m: InboundMessage) => Promise<void> | void;
  adapterOptions?: TelegramAdapterOptions;
  maxAttachmentBytes?: number;
}

interface Harness {
  fake: FakeTelegram;
  adapter: ChatAdapter;
  accepted: InboundMessage[];
  /** Every accept call, including refused ones. */
  offered: InboundMessage[];
  statuses: AdapterStatusEvent[];
  state: ReturnType<typeof memoryState>;
  logs: string[];
  sink: InboundSink & { refuse: boolean | ((m: InboundMessage) => boolean) };
}

async function fakeFor(options: StartOptions): Promise<FakeTelegram> {
  if (options.fake) return options.fake;
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  return fake;
}

function setup(options: StartOptions, fake: FakeTelegram): Harness {
  const logs: string[] = [];
  const logger = pino({ level: "trace" }, new Writable({ write: (chunk, _e, cb) => (logs.push(String(chunk)), cb()) }));
  const state = options.state ?? memoryState();
  const accepted: InboundMessage[] = [];
  const offered: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  const sink: Harness["sink"] = {
    refuse: false,
    async accept(message) {
      offered.push(message);
      if (sink.refuse === true || (typeof sink.refuse === "function" && sink.refuse(message))) throw new Error("journal unavailable");
      await options.gate?.(message);
      accepted.push(message);
      return ACCEPTED;
    },
    admit: admitUpTo(options.maxAttachmentBytes ?? 1024 * 1024),
    status: (event) => void statuses.push(event),
  };
  const adapter = createTelegramAdapter(
    channelConfig(options.apiRoot ?? fake.url, options.extra, options.token),
    { logger, state, dataDir: "/nonexistent", clock: options.clock ?? systemClock, maxAttachmentBytes: options.maxAttachmentBytes ?? 1024 * 1024 },
    { pollTimeoutSeconds: 1, retryPauseMs: 20, ...options.adapterOptions },
  );
  onTestFinished(() => adapter.stop());
  return { fake, adapter, accepted, offered, statuses, state, logs, sink };
}

async function start(options: StartOptions = {}): Promise<Harness> {
  const harness = setup(options, await fakeFor(options));
  await harness.adapter.start(harness.sink);
  return harness;
}

const texts = (messages: InboundMessage[]) => messages.map((m) => m.text);
const testSinkFor = (): InboundSink => ({ accept: async () => ACCEPTED, admit: admitUpTo(1024 * 1024), status: () => undefined });

describe("intake", () => {
  it("turns a private message into an InboundMessage with Telegram's ids, and sets the command menu", async () => {
    const { fake, accepted } = await start();
    const before = Math.floor(Date.now() / 1000) * 1000;
    fake.privateText(alice, "hello there");
    const [msg] = await fake.waitFor(() => accepted.length > 0 && accepted);
    expect(msg).toMatchObject({
      platform: "telegram",
      accountId: "tg",
      chatId: "111",
      chatType: "direct",
      userId: "111",
      userName: "alice",
      text: "hello there",
    });
    expect(msg!.messageId).toMatch(/^\d+$/);
    expect(msg!.sentAt).toBeGreaterThanOrEqual(before);
    expect(fake.commands).toEqual([
      [
        expect.objectContaining({ command: "new" }),
        expect.objectContaining({ command: "reset" }),
        expect.objectContaining({ command: "status" }),
        expect.objectContaining({ command: "stop" }),
        expect.objectContaining({ command: "help" }),
        expect.objectContaining({ command: "whoami" }),
      ],
    ]);
  });

  it("leaves the command menu alone when setCommands is off", async () => {
    const { fake, accepted } = await start({ extra: { setCommands: false } });
    fake.privateText(alice, "hi");
    await fake.waitFor(() => accepted.length === 1);
    expect(fake.calls("setMyCommands")).toBe(0);
  });

  it("removes a webhook left behind, so polling works", async () => {
    const fake = await fakeFor({});
    fake.webhook = { url: "https://old.example/hook" };
    const { accepted } = await start({ fake });
    fake.privateText(alice, "after the webhook");
    await fake.waitFor(() => accepted.length === 1);
    expect(fake.webhook).toBeUndefined();
  });

  it("keeps order within a chat while another chat's slow message is in flight", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const { fake, accepted, offered } = await start({ gate: (m) => (m.text === "a1" ? held : undefined) });
    onTestFinished(async () => release()); // before the adapter stops, should the test fail while it is held
    fake.privateText(alice, "a1");
    fake.privateText(bob, "b1");
    fake.privateText(alice, "a2");
    fake.privateText(alice, "a3");
    // Bob's message goes through while Alice's first is still held in accept.
    await fake.waitFor(() => texts(accepted).includes("b1"));
    expect(texts(offered).filter((t) => t.startsWith("a"))).toEqual(["a1"]); // her later ones wait behind it
    release();
    await fake.waitFor(() => accepted.length === 4);
    expect(texts(accepted.filter((m) => m.userId === "111"))).toEqual(["a1", "a2", "a3"]);
    // Bob did not wait for Alice's slow first message.
    expect(accepted.findIndex((m) => m.text === "b1")).toBeLessThan(accepted.findIndex((m) => m.text === "a1"));
  });

  it("persists the offset only once accept resolved, and a restart neither replays nor skips", async () => {
    const fake = await fakeFor({});
    const state = memoryState();
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const first = await start({ fake, state, gate: (m) => (m.text === "two" ? held : undefined) });
    fake.privateText(alice, "one");
    const id2 = fake.privateText(alice, "two");
    // "two" is offered only once "one" went through: whatever "one" leads to has happened.
    await fake.waitFor(() => first.offered.length === 2);
    expect(texts(first.accepted)).toEqual(["one"]);
    expect(state.data.lastUpdateId).toBeUndefined(); // "one" is accepted but shares the batch with "two", still in accept
    release();
    await fake.waitFor(() => state.data.lastUpdateId === id2);
    await first.adapter.stop();

    const id3 = fake.privateText(alice, "three"); // arrives while the bridge is down
    const second = await start({ fake, state });
    await fake.waitFor(() => state.data.lastUpdateId === id3);
    expect(texts(first.accepted)).toEqual(["one", "two"]);
    expect(texts(second.offered)).toEqual(["three"]);
    expect(fake.offsets).toContain(id2 + 1); // the second instance resumed right after the last accepted update
  });

  it("drops a saved offset older than Telegram keeps updates (ids may have restarted lower)", async () => {
    const day = 24 * 60 * 60 * 1000;
    const fresh = await start({ state: memoryState({ lastUpdateId: 5_000_000, lastUpdateAt: Date.now() - 60_000 }) });
    const below = fresh.fake.privateText(alice, "below a recent offset");
    await fresh.fake.waitFor(() => fresh.fake.offsets.includes(5_000_001) && fresh.fake.pending() === 0);
    expect(below).toBeLessThan(5_000_000);
    expect(fresh.offered).toEqual([]); // a recent offset is trusted: Telegram counts that update as confirmed

    const stale = await start({ state: memoryState({ lastUpdateId: 5_000_000, lastUpdateAt: Date.now() - 2 * day }) });
    const id = stale.fake.privateText(alice, "after a long quiet");
    await stale.fake.waitFor(() => stale.state.data.lastUpdateId === id);
    expect(texts(stale.accepted)).toEqual(["after a long quiet"]);
    expect(stale.state.data.lastUpdateAt).toBeGreaterThan(Date.now() - day);
  });

  it("does not advance past an update the core refused; it comes again", async () => {
    const { fake, accepted, state, sink, offered } = await start();
    sink.refuse = true;
    const id = fake.privateText(alice, "important");
    await fake.waitFor(() => offered.length >= 3);
    expect(state.data.lastUpdateId).toBeUndefined();
    expect(fake.pending()).toBe(1);
    sink.refuse = false;
    await fake.waitFor(() => state.data.lastUpdateId === id);
    expect(texts(accepted)).toEqual(["important"]);
  });

  it("after a refusal keeps the chat in order and hands other chats' messages over once", async () => {
    let refusals = 1;
    const { fake, accepted, state, sink, offered } = await start();
    sink.refuse = (m) => m.text === "a1" && refusals-- > 0;
    fake.privateText(alice, "a1");
    fake.privateText(bob, "b1");
    const last = fake.privateText(alice, "a2");
    await fake.waitFor(() => state.data.lastUpdateId === last);
    expect(texts(accepted.filter((m) => m.userId === "111"))).toEqual(["a1", "a2"]);
    expect(texts(offered.filter((m) => m.userId === "222"))).toEqual(["b1"]);
  });

  it("says which group messages address the bot (mention, reply, command, text mention), with the mention stripped; the core applies the rule", async () => {
    const { fake, accepted } = await start();
    fake.groupText(GROUP, alice, "chatter among people");
    fake.groupText(GROUP, alice, "what is up?", { mention: true });
    fake.groupText(GROUP, bob, "and you?", { replyToBot: true });
    fake.groupText(GROUP, alice, `/new@${fake.bot.username}`);
    fake.groupText(GROUP, bob, "Agent, a question", { textMention: true });
    fake.groupText(-5, alice, "basic group", { mention: true, basicGroup: true });
    const last = fake.groupText(GROUP, alice, "more chatter");
    await fake.waitFor(() => fake.offsets.includes(last + 1));
    expect(accepted.every((m) => m.chatType === "group")).toBe(true);
    const mentioned = accepted.filter((m) => m.mentioned);
    expect(texts(mentioned.filter((m) => m.chatId === "-100"))).toEqual(["what is up?", "and you?", "/new", "Agent, a question"]);
    expect(texts(mentioned.filter((m) => m.chatId === "-5"))).toEqual(["basic group"]);
    expect(texts(accepted.filter((m) => m.mentioned === false))).toEqual(["chatter among people", "more chatter"]);
  });

  it("leaves a message the core defers (busy) unacknowledged: the offset stays and it comes again", async () => {
    const { fake, sink, accepted, offered } = await start();
    let deferOnce = true;
    sink.accept = async (message) => {
      offered.push(message);
      if (deferOnce) {
        deferOnce = false;
        return { status: "deferred", reason: "busy", acknowledge: false };
      }
      accepted.push(message);
      return ACCEPTED;
    };
    const id = fake.privateText(alice, "try me twice");
    await fake.waitFor(() => fake.offsets.includes(id + 1));
    expect(texts(offered)).toEqual(["try me twice", "try me twice"]);
    expect(texts(accepted)).toEqual(["try me twice"]);
  });

  it("ignores channel posts and moves past them", async () => {
    const { fake, accepted, state } = await start();
    fake.channelPost(-200, "news");
    const id = fake.privateText(alice, "hello");
    await fake.waitFor(() => state.data.lastUpdateId === id);
    expect(texts(accepted)).toEqual(["hello"]);
  });

  it("downloads a document into the message's attachments, the caption as text", async () => {
    const { fake, accepted } = await start();
    fake.document(alice, "notes.txt", Buffer.from("file body"), "see attached");
    const [msg] = await fake.waitFor(() => accepted.length > 0 && accepted);
    expect(msg!.text).toBe("see attached");
    expect(msg!.attachments).toHaveLength(1);
    expect(msg!.attachments?.[0]).toMatchObject({ kind: "document", fileName: "notes.txt", mimeType: "text/plain" });
    expect(msg!.attachments![0]!.data.toString()).toBe("file body");
  });

  it("downloads a photo's largest size only", async () => {
    const { fake, accepted } = await start();
    fake.photo(alice, [Buffer.from("small"), Buffer.from("medium"), Buffer.from("the largest size")]);
    const [msg] = await fake.waitFor(() => accepted.length > 0 && accepted);
    expect(msg!.text).toBe("");
    expect(msg!.attachments).toHaveLength(1);
    expect(msg!.attachments?.[0]).toMatchObject({ kind: "photo", mimeType: "image/jpeg" });
    expect(msg!.attachments![0]!.fileName).toMatch(/^photo-\d+\.jpg$/);
    expect(msg!.attachments![0]!.data.toString()).toBe("the largest size");
    expect(fake.downloads).toBe(1);
  });

  it("does not fetch a file over the limit, passes the caption on and names the file for the core to tell the sender", async () => {
    const { fake, accepted } = await start({ maxAttachmentBytes: 8 });
    fake.document(alice, "big.bin", Buffer.alloc(64, 1), "with a big file");
    await fake.waitFor(() => accepted.length === 1);
    expect(texts(accepted)).toEqual(["with a big file"]);
    expect(accepted[0]!.attachments).toBeUndefined();
    expect(accepted[0]!.droppedAttachments).toEqual([{ fileName: "big.bin", reason: "too_large" }]);
    expect(fake.downloads).toBe(0);
    expect(fake.sentMessages(alice.id)).toEqual([]); // the adapter itself says nothing
  });

  it("does not fetch files when the core's admission says no (a stranger)", async () => {
    const { fake, offered, sink } = await start();
    const asked: string[] = [];
    sink.admit = (question) => {
      asked.push(question.message.userId);
      return {
        allowed: question.message.userId === String(alice.id),
        attachments: question.attachmentSizes.map(() => ({ fetch: false, reason: "disabled" as const })),
      };
    };
    fake.document(bob, "stranger.txt", Buffer.from("unsolicited"), "hello?");
    await fake.waitFor(() => offered.length === 1);
    expect(offered[0]!.attachments).toBeUndefined();
    expect(fake.calls("getFile")).toBe(0);
    expect(fake.downloads).toBe(0);
    expect(asked).toEqual([String(bob.id)]);
  });
});

describe("lifecycle", () => {
  it("does not spin against a Bot API server that answers an empty getUpdates at once: every such poll is followed by a pause", async () => {
    const fake = await fakeFor({});
    fake.holdPolls = false;
    const manual = createManualClock();
    const events: string[] = [];
    fake.onCall = (method) => {
      if (method === "getUpdates") events.push("poll");
    };
    const clock: Clock = {
      now: () => manual.now(),
      setTimeout(fn, ms) {
        events.push("pause");
        return manual.setTimeout(fn, ms);
      },
      sleep: (ms, signal) => sleepOn(clock, ms, signal),
    };
    const { adapter } = setup({ clock, adapterOptions: { pollTimeoutSeconds: 25, retryPauseMs: 1000 } }, fake);
    await adapter.start(testSinkFor());
    for (let round = 1; round <= 3; round++) {
      // Time stands still: the adapter waits on its clock instead of asking again.
      await fake.waitFor(() => events.at(-1) === "pause" && events.filter((e) => e === "poll").length === round);
      manual.advance(10_000);
    }
    await fake.waitFor(() => events.filter((e) => e === "poll").length === 4);
    expect(events.join(" ")).not.toMatch(/poll poll/);
    expect(fake.calls("getUpdates")).toBeLessThanOrEqual(5);
  });

  it("stop ends a pending long poll at once and is idempotent", async () => {
    const { fake, adapter, statuses, offered, logs } = await start({ adapterOptions: { pollTimeoutSeconds: 30 } });
    await fake.waitFor(() => fake.openPolls() === 1);
    await Promise.all([adapter.stop(), adapter.stop()]); // would wait out the 30 s poll if it were not aborted
    await adapter.stop();
    await fake.waitFor(() => fake.openPolls() === 0);
    const id = fake.privateText(alice, "after stop");
    // A later adapter takes the update and polls past it: a stopped one still polling would have taken it or met a 409 meanwhile.
    const next = await start({ fake });
    await fake.waitFor(() => fake.offsets.includes(id + 1));
    expect(texts(next.accepted)).toEqual(["after stop"]);
    expect(offered).toEqual([]);
    expect(`${logs.join("\n")}${next.logs.join("\n")}`).not.toMatch(/another client polls/);
    expect(statuses.filter((s) => s.state === "stopped")).toHaveLength(1);
  }, 10_000);

  it("refuses to start with a token Telegram does not know, without printing it", async () => {
    const fake = await fakeFor({});
    const other = "555555555:ZZZbbbCCCdddEEEfffGGGhhhIIIjjjKKKll";
    const harness = setup({ fake, token: other }, fake);
    const error = await harness.adapter.start(harness.sink).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TelegramAdapterError);
    expect((error as TelegramAdapterError).status).toBe(401);
    expect(String((error as Error).message)).not.toContain(other.split(":")[1]);
    expect(harness.statuses.at(-1)?.state).toBe("failed");
    expect(fake.calls("getUpdates")).toBe(0);
  });

  it("starts while Telegram is unreachable and connects once it is back", async () => {
    const port = await deadPort();
    const harness = setup({ apiRoot: `http://127.0.0.1:${port}` }, await fakeFor({}));
    await harness.adapter.start(harness.sink);
    expect(harness.statuses.map((s) => s.state)).toEqual(["starting", "reconnecting"]);
    const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN, port });
    onTestFinished(() => fake.close());
    fake.privateText(alice, "are you there?");
    await fake.waitFor(() => harness.accepted.length === 1);
    expect(harness.accepted[0]!.text).toBe("are you there?");
    expect(harness.statuses.map((s) => s.state)).toContain("connected");
    expect(harness.logs.join("\n")).not.toContain(TOKEN_SECRET_PART);
  });
});

describe("webhook mode", () => {
  it("registers the webhook with its secret, refuses forged posts, and answers 200 only once accepted", async () => {
    const port = await deadPort();
    const secretToken = "s3cret-token_for-tests";
    const { fake, accepted, sink } = await start({
      extra: { mode: "webhook", webhook: { url: "https://bridge.example/telegram", host: "127.0.0.1", port, path: "/telegram", secretToken } },
    });
    expect(fake.webhook).toEqual({ url: "https://bridge.example/telegram", secret_token: secretToken });
    expect(fake.calls("getUpdates")).toBe(0);
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
    expect(texts(accepted)).toEqual(["refused", "hello"]);
  });
});

describe("replies", () => {
  const target: ChatTarget = { platform: "telegram", accountId: "tg", chatId: "111", chatType: "direct" };

  it("renders Markdown as Telegram HTML", async () => {
    const { fake, adapter } = await start();
    await adapter.send(target, "**bold** and `a < b` and\n\n```ts\nlet x = 1 && 2;\n```", { format: "markdown" });
    const [sent] = fake.sentMessages(111);
    expect(sent!.parse_mode).toBe("HTML");
    expect(sent!.text).toBe('<b>bold</b> and <code>a &lt; b</code> and\n\n<pre><code class="language-ts">let x = 1 &amp;&amp; 2;</code></pre>');
  });

  it("sends plain text verbatim, and says which message it became (for later edits)", async () => {
    const { fake, adapter } = await start();
    const receipt = await adapter.send(target, "**not bold** <tag>", { format: "plain" });
    expect(receipt).toEqual({ messageId: String(fake.sentMessages(111)[0]!.message_id) });
    expect(fake.sentMessages(111)).toEqual([expect.objectContaining({ text: "**not bold** <tag>" })]);
    expect(fake.sentMessages(111)[0]!.parse_mode).toBeUndefined();
  });

  it('edits in place: Markdown as HTML, plain text when Telegram rejects the entities, "not modified" as done, a deleted message as a permanent refusal', async () => {
    const { fake, adapter } = await start();
    const edits = adapter.edits;
    if (!edits) throw new Error("the Telegram adapter edits");
    const receipt = await adapter.send(target, "first", { format: "markdown" });
    const id = receipt?.messageId;
    if (!id) throw new Error("send gave no message id");
    await edits.edit(target, id, "**second**", { format: "markdown" });
    expect(fake.shownMessages(111)[0]).toMatchObject({ text: "<b>second</b>", parse_mode: "HTML" });
    await edits.edit(target, id, "**second**", { format: "markdown" }); // Telegram: "message is not modified"
    fake.injectError(
      "editMessageText",
      400,
      { ok: false, error_code: 400, description: "Bad Request: can't parse entities: unsupported start tag at byte offset 0" },
      1,
    );
    await edits.edit(target, id, "**third**", { format: "markdown" });
    const shown = fake.shownMessages(111);
    expect(shown).toHaveLength(1);
    expect(shown[0]!.text).toBe("**third**");
    expect(shown[0]!.parse_mode).toBeUndefined();
    const refused = edits.edit(target, "999999", "gone", { format: "plain" });
    await expect(refused).rejects.toBeInstanceOf(SendError);
    await expect(refused).rejects.toMatchObject({ permanent: true, status: 400 });
  });

  it("falls back to plain text when Telegram rejects the entities", async () => {
    const { fake, adapter } = await start();
    fake.rejectHtml(1);
    await adapter.send(target, "**still** delivered", { format: "markdown" });
    expect(fake.sentMessages(111)).toEqual([expect.objectContaining({ text: "**still** delivered" })]);
    expect(fake.sentMessages(111)[0]!.parse_mode).toBeUndefined();
  });

  it("HTML overflow: sends HTML whose source is over 4,096 characters when its visible text is within (Telegram counts after parsing)", async () => {
    const { fake, adapter } = await start();
    const text = `${"a<b **bold** & ".repeat(250)}end`; // 4,003 characters of Markdown
    const html = telegramMarkdownToHtml(text);
    expect(html.length).toBeGreaterThan(4096);
    expect(adapter.measure(text, "markdown")).toBeLessThanOrEqual(4096);
    expect(adapter.measure(text, "markdown")).toBe(parseTelegramHtml(html).length);
    await adapter.send(target, text, { format: "markdown" });
    expect(fake.sentMessages(111)).toEqual([expect.objectContaining({ text: html, parse_mode: "HTML" })]);
    expect(fake.calls("sendMessage")).toBe(1);
  });

  it("quotes the answered message in groups", async () => {
    const { fake, adapter } = await start();
    await adapter.send({ ...target, chatId: String(GROUP), chatType: "group", replyToMessageId: "42" }, "answer", { format: "plain" });
    expect(fake.sentMessages(GROUP)).toEqual([expect.objectContaining({ text: "answer", reply_to: 42 })]);
  });

  it("a 429 fails at once as a SendError carrying retry_after: no retry layer inside the adapter", async () => {
    const { fake, adapter } = await start();
    fake.inject429("sendMessage", 30, 1);
    const error = await adapter.send(target, "x", { format: "plain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TelegramAdapterError);
    expect(error).toBeInstanceOf(SendError);
    expect(error).toMatchObject({ status: 429, retryAfterMs: 30_000, permanent: false });
    expect(fake.calls("sendMessage")).toBe(1);
  });

  it("a refusal that will not change (bot blocked, chat gone) is a permanent SendError", async () => {
    const { fake, adapter } = await start();
    fake.injectError("sendMessage", 403, { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" }, 1);
    await expect(adapter.send(target, "x", { format: "plain" })).rejects.toMatchObject({ status: 403, permanent: true });
    fake.injectError("sendMessage", 400, { ok: false, error_code: 400, description: "Bad Request: chat not found" }, 1);
    await expect(adapter.send(target, "x", { format: "plain" })).rejects.toMatchObject({ status: 400, permanent: true });
    expect(fake.calls("sendMessage")).toBe(2);
  });

  it("an error body that is not Telegram-shaped keeps its HTTP status and text", async () => {
    const { fake, adapter, logs } = await start();
    fake.injectError("sendMessage", 502, "<html><body>502 Bad Gateway from the proxy</body></html>", 1);
    const error = await adapter.send(target, "x", { format: "plain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ status: 502, permanent: false });
    expect(String((error as Error).message)).toMatch(/502.*Bad Gateway from the proxy/);
    fake.injectError("getUpdates", 500, { detail: "local server exploded" }, 1);
    await fake.waitFor(() => logs.some((l) => l.includes("local server exploded")));
    const line = logs.find((l) => l.includes("local server exploded"))!;
    expect(line).toMatch(/500/);
    expect(logs.join("\n")).not.toContain("undefined: undefined");
  });

  it("typing is best effort: no flood waits, failures never throw", async () => {
    const { fake, adapter } = await start();
    await adapter.sendTyping(target);
    expect(fake.chatActions).toEqual([{ chat_id: "111", action: "typing" }]);
    fake.inject429("sendChatAction", 0, 1);
    await expect(adapter.sendTyping(target)).resolves.toBeUndefined();
    expect(fake.calls("sendChatAction")).toBe(2); // not retried, even for a zero wait
    expect(fake.chatActions).toHaveLength(1);
    await fake.close();
    await expect(adapter.sendTyping(target)).resolves.toBeUndefined();
  });

  it("never writes the bot token to logs or errors", async () => {
    const { fake, adapter, logs } = await start();
    fake.document(alice, "f.txt", Buffer.from("x"));
    await fake.waitFor(() => fake.downloads === 1);
    await fake.close(); // polls and sends now fail and get logged
    const error = await adapter.send(target, "x", { format: "plain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ status: undefined, permanent: false });
    expect(String((error as Error).message)).toMatch(/telegram sendMessage failed/);
    expect(String((error as Error).message)).not.toContain(TOKEN_SECRET_PART);
    // Nor anywhere a logger's error serializer looks (the cause chain included).
    expect(inspect(error, { depth: 10 })).not.toContain(TOKEN_SECRET_PART);
    await fake.waitFor(() => logs.some((l) => l.includes("poll failed")));
    expect(logs.join("\n")).not.toContain(TOKEN_SECRET_PART);
  });
});

describe("telegramMarkdownToHtml", () => {
  it("produces HTML Telegram accepts for what agents write", () => {
    const samples = [
      "a < b & c > d",
      "*it* **b** ~~s~~ ***both***",
      "# Title\n\n- one\n- two\n\n1. x\n2. y",
      "> quoted **b**",
      "```\n<raw>\n```",
      "[link](https://x.example/?a=1&b=2)",
      "- [ ] todo\n- [x] done",
      "| a | b |\n|---|---|\n| <1> | 2 |",
      "<script>alert(1)</script> and <b>raw html</b>",
      "1. a\n   - nested *it*\n2. b",
    ];
    for (const md of samples) expect(() => parseTelegramHtml(telegramMarkdownToHtml(md)), md).not.toThrow();
  });

  it("escapes text once and maps Markdown to Telegram's tags", () => {
    expect(telegramMarkdownToHtml("a < b & c")).toBe("a &lt; b &amp; c");
    expect(telegramMarkdownToHtml("AT&amp;T")).toBe("AT&amp;T"); // an entity in Markdown text is that character
    expect(telegramMarkdownToHtml("`&amp;`")).toBe("<code>&amp;amp;</code>"); // code is literal
    expect(telegramMarkdownToHtml("# Title")).toBe("<b>Title</b>");
    expect(telegramMarkdownToHtml("*it* and _it_ and ~~gone~~")).toBe("<i>it</i> and <i>it</i> and <s>gone</s>");
    expect(telegramMarkdownToHtml("- one\n- two")).toBe("• one\n• two");
    expect(telegramMarkdownToHtml("1. a\n   - b")).toBe("1. a\n   • b");
    expect(telegramMarkdownToHtml("- [ ] todo\n- [x] done")).toBe("• ☐ todo\n• ☑ done");
    expect(telegramMarkdownToHtml("[l](https://x.example/?a=1&b=2)")).toBe('<a href="https://x.example/?a=1&amp;b=2">l</a>');
    expect(telegramMarkdownToHtml("[l](javascript:alert(1))")).toBe("l");
    expect(telegramMarkdownToHtml("```py\nx = '<'\n```")).toBe("<pre><code class=\"language-py\">x = '&lt;'</code></pre>");
    expect(telegramMarkdownToHtml("| a | b |\n|---|---|\n| 1 | 2 |")).toBe("<pre>| a | b |\n|---|---|\n| 1 | 2 |</pre>");
  });
});
