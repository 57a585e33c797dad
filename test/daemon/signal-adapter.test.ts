/**
 * What is particular to Signal, against the fake signal-cli daemon over real
 * HTTP: mentions and quotes in groups, duplicate deliveries, the spool that
 * stands in for the redelivery signal-cli never does, dropped and deaf event
 * streams, rate limits and proof-required challenges, edits within Signal's
 * limits, files and voice notes both ways, and `agent-bridge check`.
 */
import pino from "pino";
import { beforeAll, describe, expect, it } from "vitest";
import type { SignalChannelConfig } from "../../daemon/adapters/signal/config.js";
import { createSignalAdapter } from "../../daemon/adapters/signal/index.js";
import { signalPlatform } from "../../daemon/adapters/signal/platform.js";
import { undiciHttp } from "../../daemon/helpers/probe.js";
import { type AdapterStatusEvent, type ChatAdapter, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { type Clock, createManualClock, systemClock } from "../../shared/clock.js";
import { createFakeSignal, type FakeSignal, type SignalPerson } from "../fakes/signal.js";
import { testSink } from "../fakes/sink.js";
import { m4aFile, oggOpusFile } from "../helpers/audio-containers.js";
import { advanceUntil } from "../helpers/advance-until.js";
import { waitUntil } from "../helpers/wait.js";
import { logCollector } from "./adapters/harness/harness.js";

const ACCOUNT = "+15550001111";
let fake: FakeSignal;
let alice: SignalPerson;
let bob: SignalPerson;
let group: string;

beforeAll(async () => {
  fake = await createFakeSignal({ account: ACCOUNT, keepAliveMs: 100 });
  alice = fake.person("Alice", "+15550002222");
  bob = fake.person("Bob", "+15550003333");
  group = fake.createGroup("Team", [alice, bob]);
  return () => fake.close();
});

function channel(over: Partial<SignalChannelConfig> = {}): SignalChannelConfig {
  const parsed = signalPlatform.schema.parse({ type: "signal", account: ACCOUNT, url: fake.url, access: { mode: "open" } });
  return { ...parsed, id: "sig", ...over } as SignalChannelConfig;
}

interface Built {
  adapter: ChatAdapter;
  got: InboundMessage[];
  statuses: AdapterStatusEvent[];
  logs: () => string;
}

function memoryState(store = new Map<string, unknown>()) {
  return { get: <T>(k: string) => store.get(k) as T | undefined, set: async (k: string, v: unknown) => void store.set(k, v) };
}

async function started(
  options: { config?: Partial<SignalChannelConfig>; state?: Map<string, unknown>; clock?: Clock; accept?: (m: InboundMessage) => Promise<void> | void } = {},
): Promise<Built> {
  const logs = logCollector();
  const got: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  const adapter = createSignalAdapter(
    channel(options.config),
    {
      logger: pino({ level: "trace" }, logs),
      state: memoryState(options.state),
      dataDir: "/nonexistent",
      clock: options.clock ?? systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { retryPauseMs: 20 },
  );
  await adapter.start(
    testSink({
      accept: async (m) => {
        await options.accept?.(m);
        got.push(m);
      },
      status: (e) => statuses.push(e),
    }),
  );
  return { adapter, got, statuses, logs: logs.text };
}

describe("messages in", () => {
  let built: Built;
  beforeAll(async () => {
    built = await started();
    return () => built.adapter.stop();
  });

  it("a direct message: the sender's ACI as user and chat, their number as an alias, <timestamp>:<author> as its id", async () => {
    const ts = fake.direct(alice, "hello there");
    const m = await waitUntil(() => built.got.find((x) => x.text === "hello there"), "the direct message");
    expect(m).toMatchObject({
      platform: "signal",
      accountId: "sig",
      chatId: alice.uuid,
      chatType: "direct",
      userId: alice.uuid,
      userName: "Alice",
      messageId: `${ts}:${alice.uuid}`,
      sentAt: ts,
    });
    expect(m.userAliases).toEqual([alice.number]);
    expect(m.mentioned).toBeUndefined();
  });

  it("in a group: a mention of the bot is taken out of the text and marks it mentioned; a quote of the bot's message counts too", async () => {
    fake.group(group, alice, "what is up", { mention: true });
    const mentioned = await waitUntil(() => built.got.find((x) => x.text === "what is up"), "the mention");
    expect(mentioned).toMatchObject({ chatId: group, chatType: "group", mentioned: true });

    fake.group(group, bob, "just chatting");
    const plain = await waitUntil(() => built.got.find((x) => x.text === "just chatting"), "the unaddressed message");
    expect(plain.mentioned).toBe(false);

    const sent = await built.adapter.send({ platform: "signal", accountId: "sig", chatId: group, chatType: "group" }, "I am the bot", { format: "plain" });
    const ours = Number(sent?.messageId?.split(":")[0]);
    fake.group(group, bob, "replying to you", { quote: { timestamp: ours, author: ACCOUNT } });
    const quoted = await waitUntil(() => built.got.find((x) => x.text === "replying to you"), "the quoting message");
    expect(quoted.mentioned).toBe(true);
  });

  it("a reply in a group quotes the message it answers (Signal's reply); a direct reply quotes nothing", async () => {
    const target = { platform: "signal", accountId: "sig", chatId: group, chatType: "group" as const, replyToMessageId: `123456:${alice.uuid}` };
    await built.adapter.send(target, "answer", { format: "plain" });
    expect(fake.sent(group).at(-1)).toMatchObject({ text: "answer", quote: { timestamp: 123456, author: alice.uuid } });
    await built.adapter.send({ ...target, chatId: alice.uuid, chatType: "direct" }, "direct answer", { format: "plain" });
    expect(fake.sent(alice.uuid).at(-1)?.quote).toBeUndefined();
  });

  it("a duplicate delivery of one message reaches the core with the same id (the core answers it once)", async () => {
    const ts = fake.direct(bob, "twice please");
    fake.deliverAgain(ts);
    fake.direct(bob, "after the duplicate");
    await waitUntil(() => built.got.find((x) => x.text === "after the duplicate"), "the next message");
    // Still spooled when the copy came: the adapter drops it; already handed over: the core knows the id.
    const copies = built.got.filter((x) => x.text === "twice please");
    expect(copies.length).toBeGreaterThanOrEqual(1);
    expect(new Set(copies.map((x) => x.messageId))).toEqual(new Set([`${ts}:${bob.uuid}`]));
  });

  it("typing indicators and other events without a message are not messages", async () => {
    fake.typing(alice);
    fake.direct(alice, "after typing");
    await waitUntil(() => built.got.find((x) => x.text === "after typing"), "the message after");
    expect(built.got.filter((x) => x.userId === alice.uuid && !x.text)).toEqual([]);
  });

  it("a photo and a voice note come in as files, the voice note as audio with its seconds read from the file (transcription takes it)", async () => {
    const png = Buffer.from("89504e470d0a1a0a", "hex");
    // An iOS voice note: AAC in M4A, 7.5 s.
    const voice = m4aFile({ timescale: 44_100, movieDuration: 44_100 * 7.5 });
    fake.direct(alice, "look", { files: [{ contentType: "image/png", filename: "pic.png", data: png }] });
    fake.direct(alice, "", { files: [{ contentType: "audio/aac", data: voice }] });
    const photo = await waitUntil(() => built.got.find((x) => x.text === "look"), "the photo");
    expect(photo.attachments?.[0]).toMatchObject({ kind: "photo", fileName: "pic.png", mimeType: "image/png" });
    expect(photo.attachments?.[0]?.data.equals(png)).toBe(true);
    const note = await waitUntil(() => built.got.find((x) => x.attachments?.[0]?.kind === "audio"), "the voice note");
    expect(note.attachments?.[0]?.fileName).toMatch(/\.m4a$/);
    expect(note.attachments?.[0]?.data.equals(voice)).toBe(true);
    expect(note.attachments?.[0]?.seconds).toBeCloseTo(7.5, 6);
    // Ogg Opus too; a file whose container says nothing has no seconds (the core then goes by its bytes).
    fake.direct(alice, "opus", { files: [{ contentType: "audio/ogg", data: oggOpusFile(12.25) }] });
    fake.direct(alice, "unknown", { files: [{ contentType: "audio/aac", data: Buffer.from("not a container") }] });
    const opus = await waitUntil(() => built.got.find((x) => x.text === "opus"), "the opus note");
    expect(opus.attachments?.[0]?.seconds).toBeCloseTo(12.25, 4);
    const unknown = await waitUntil(() => built.got.find((x) => x.text === "unknown"), "the unknown note");
    expect(unknown.attachments?.[0]).toMatchObject({ kind: "audio" });
    expect(unknown.attachments?.[0]?.seconds).toBeUndefined();
  });
});

describe("nothing is lost", () => {
  it("a message the core could not journal stays in the spool, and a new life hands it over", async () => {
    const state = new Map<string, unknown>();
    let failing = true;
    const first = await started({
      state,
      accept: () => {
        if (failing) throw new Error("journal is down");
      },
    });
    const ts = fake.direct(alice, "keep me");
    await waitUntil(() => first.logs().includes("could not be handed over"), "the failed hand-over");
    expect(Object.keys(state.get("spool") as object)).toEqual([`${ts}:${alice.uuid}`]);
    await first.adapter.stop();
    // signal-cli does not send it again: only the spool has it now.
    failing = false;
    const second = await started({ state });
    try {
      await waitUntil(() => second.got.find((x) => x.text === "keep me"), "the spooled message in the new life");
      await waitUntil(() => Object.keys((state.get("spool") as object) ?? {}).length === 0, "the spool emptied");
    } finally {
      await second.adapter.stop();
    }
  });

  it("a dropped event stream reconnects; what came meanwhile waits on the server and arrives", async () => {
    const built = await started();
    try {
      fake.dropStreams();
      await waitUntil(() => built.statuses.some((s) => s.state === "reconnecting" && s.reason === "closed"), "reconnecting");
      fake.direct(bob, "while you were away");
      await waitUntil(() => built.got.find((x) => x.text === "while you were away"), "the message after the reconnect");
    } finally {
      await built.adapter.stop();
    }
  });

  it("a stream that is up but delivers nothing (no keep-alive either) is reconnected by the watchdog, reason deaf", async () => {
    const clock = createManualClock(Date.now());
    const built = await started({ clock, config: { watchdogMs: 30_000 } });
    try {
      await waitUntil(() => fake.liveStreams() > 0, "the stream open");
      fake.silence();
      fake.direct(alice, "are you listening");
      await advanceUntil(clock, () => built.got.find((x) => x.text === "are you listening"), "the message after the watchdog", { stepMs: 5000 });
      expect(built.statuses.some((s) => s.state === "reconnecting" && s.reason === "deaf")).toBe(true);
    } finally {
      await built.adapter.stop();
    }
  });
});

describe("replies out", () => {
  let built: Built;
  beforeAll(async () => {
    built = await started();
    return () => built.adapter.stop();
  });
  const direct = () => ({ platform: "signal", accountId: "sig", chatId: alice.uuid, chatType: "direct" as const });

  it("a rate limit is a transient SendError with Signal's wait; a proof-required one tells the operator how to solve it", async () => {
    fake.rateLimit(1, 42);
    const limited = await built.adapter.send(direct(), "hi", { format: "plain" }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(SendError);
    expect(limited).toMatchObject({ permanent: false, retryAfterMs: 42_000 });

    fake.rateLimit(1, 86_400, "challenge-token-123");
    const proof = await built.adapter.send(direct(), "hi", { format: "plain" }).catch((e: unknown) => e);
    expect(proof).toMatchObject({ permanent: false, retryAfterMs: 86_400_000 });
    expect(String((proof as Error).message)).toContain("submitRateLimitChallenge --challenge challenge-token-123");
    expect(built.logs()).toContain("rate limited by Signal");
    expect(built.logs()).toContain("the operator must act");

    await built.adapter.send(direct(), "through now", { format: "plain" });
    expect(fake.sent(alice.uuid).at(-1)?.text).toBe("through now");
  });

  it("markdown goes out as Signal text styles, the markup gone; measure counts what shows", async () => {
    await built.adapter.send(direct(), "**Done**: see `notes.md` and [the docs](https://example.org)", { format: "markdown" });
    expect(fake.sent(alice.uuid).at(-1)).toMatchObject({
      text: "Done: see notes.md and the docs (https://example.org)",
      styles: ["0:4:BOLD", "10:8:MONOSPACE"],
    });
    expect(built.adapter.measure("**ab**", "markdown")).toBe(2);
    expect(built.adapter.measure("**ab**", "plain")).toBe(6);
  });

  it("an unknown group is a permanent failure", async () => {
    const failed = await built.adapter.send({ ...direct(), chatId: "bm9ncm91cA==", chatType: "group" }, "x", { format: "plain" }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ permanent: true });
  });

  it("streamed edits stay within Signal's 10 edits of a message: previews past the ninth are skipped, the final text always lands", async () => {
    const receipt = await built.adapter.send(direct(), "a", { format: "plain", final: false });
    const id = receipt?.messageId ?? "";
    let text = "a";
    for (let i = 0; i < 15; i++) {
      text += "a";
      await built.adapter.edits?.edit(direct(), id, text, { format: "plain", final: false });
    }
    await built.adapter.edits?.edit(direct(), id, "the whole answer", { format: "plain", final: true });
    const shown = fake.sent(alice.uuid).find((m) => m.timestamp === Number(id.split(":")[0]));
    expect(shown?.text).toBe("the whole answer");
    expect(shown?.history.length).toBe(11);
    expect(shown?.refusedEdits).toBe(0);
    expect(built.adapter.limits.minEditIntervalMs).toBeGreaterThanOrEqual(2000);
  });

  it("the edits made are remembered across a restart: a new life does not go past Signal's 10", async () => {
    const state = new Map<string, unknown>();
    const first = await started({ state });
    const id = (await first.adapter.send(direct(), "x", { format: "plain", final: false }))?.messageId ?? "";
    for (let i = 1; i <= 9; i++) await first.adapter.edits?.edit(direct(), id, `x${i}`, { format: "plain", final: false });
    await first.adapter.stop();
    const second = await started({ state });
    try {
      await second.adapter.edits?.edit(direct(), id, "more", { format: "plain", final: false });
      await second.adapter.edits?.edit(direct(), id, "the end", { format: "plain", final: true });
      const shown = fake.sent(alice.uuid).find((m) => m.timestamp === Number(id.split(":")[0]));
      expect(shown).toMatchObject({ text: "the end", refusedEdits: 0 });
    } finally {
      await second.adapter.stop();
    }
  });

  it("files go out as attachments, a voice note flagged as one; reactions set and removed", async () => {
    await built.adapter.files?.send(direct(), { path: "out/a.ogg", fileName: "a.ogg", mimeType: "audio/ogg", kind: "voice", data: Buffer.from("ogg") });
    const voice = fake.sent(alice.uuid).at(-1);
    expect(voice).toMatchObject({ voiceNote: true, attachments: [{ contentType: "audio/ogg", filename: "a.ogg" }] });
    expect(voice?.attachments[0]?.data.toString()).toBe("ogg");

    const ts = fake.direct(alice, "react to me");
    const m = await waitUntil(() => built.got.find((x) => x.text === "react to me"), "the message");
    await built.adapter.reactions?.react(direct(), m.messageId, "👀", { remove: false });
    expect(fake.reactionOn(alice.uuid, ts, alice.uuid)).toBe("👀");
    await built.adapter.reactions?.react(direct(), m.messageId, "👀", { remove: true });
    expect(fake.reactionOn(alice.uuid, ts, alice.uuid)).toBeUndefined();
  });
});

describe("agent-bridge check", () => {
  const deps = { http: undiciHttp, timeoutMs: 5000, readFile: async () => "" };
  it("ok when the daemon answers and serves the account", async () => {
    const result = await signalPlatform.check(channel(), deps);
    expect(result).toMatchObject({ status: "ok" });
  });
  it("fails, saying how, for another account or no daemon; a proxy password never shows", async () => {
    const otherAccount: SignalChannelConfig = { ...channel(), account: "+15559999999" };
    const withPassword: SignalChannelConfig = { ...channel(), url: "http://bridge:hunter2secret@127.0.0.1:9" };
    const other = await signalPlatform.check(otherAccount, deps);
    expect(other).toMatchObject({ status: "fail" });
    expect(other?.message).toContain("Specified account does not exist");
    const down = await signalPlatform.check(withPassword, deps);
    expect(down).toMatchObject({ status: "fail" });
    expect(JSON.stringify(down)).not.toContain("hunter2secret");
    expect(signalPlatform.secrets(withPassword)).toContain("hunter2secret");
  });
});
