import { ACCEPTED, admitUpTo } from "../fakes/sink.js";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { BufferJSON } from "@whiskeysockets/baileys";
import { pino } from "pino";
import qrcodeTerminal from "qrcode-terminal";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import type { WhatsAppChannelConfig } from "../../daemon/adapters/whatsapp/config.js";
import { createWhatsAppAdapter, RECONNECT_BACKOFF, WhatsAppAdapterError } from "../../daemon/adapters/whatsapp/index.js";
import { backoffDelay } from "../../shared/backoff.js";
import { daemonConfigSchema } from "../../daemon/config/schema.js";
import { checkAccess } from "../../daemon/core/access.js";
import type { AdapterStateStore, AdapterStatusEvent, ChatTarget, InboundMessage, InboundSink } from "../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import {
  BOT_ACCOUNT,
  createFakeBaileys,
  createFakeMedia,
  directByLid,
  directByPhone,
  documentFrom,
  groupText,
  imageFrom,
  lidJid,
  ownMessage,
  pnJid,
} from "../fakes/baileys-socket.js";

/** The longest reconnect delay after `failures` failed connects in a row: the backoff with its jitter at the top. */
const backoffCeiling = (failures: number): number => backoffDelay(failures + 1, RECONNECT_BACKOFF, { bytes: (n) => Buffer.alloc(n), float: () => 1 });
/** Lets the reconnect loop react to a close or a timer (it does so on the next turn, not inside the event). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const GROUP = "120363000000000001@g.us";
const ANA = "4915111111111";
const LIA_LID = "210000000000042";
const LIA_PHONE = "4917622222222";

interface RecordingSink extends InboundSink {
  accepted: InboundMessage[];
  statuses: AdapterStatusEvent[];
  states(): string[];
}

function recordingSink(accept?: (m: InboundMessage) => Promise<void>, maxAttachmentBytes = 1024 * 1024): RecordingSink {
  const accepted: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  return {
    accepted,
    statuses,
    states: () => statuses.map((s) => s.state),
    async accept(m) {
      if (accept) await accept(m);
      accepted.push(m);
      return ACCEPTED;
    },
    admit: admitUpTo(maxAttachmentBytes),
    status: (e) => void statuses.push(e),
  };
}

function textSink() {
  let text = "";
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return { stream, text: () => text };
}

function channelConfig(dataDir: string, channel: Record<string, unknown> = {}): WhatsAppChannelConfig {
  const cfg = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    dataDir,
    channels: [{ type: "whatsapp", id: "wa", ...channel }],
  });
  const ch = cfg.channels[0];
  if (ch?.type !== "whatsapp") throw new Error("expected a whatsapp channel");
  return ch;
}

function memoryState(): AdapterStateStore & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    get: <T>(key: string) => data.get(key) as T | undefined,
    async set(key, value) {
      // Stored as JSON, as the daemon's store does.
      if (value === undefined) data.delete(key);
      else data.set(key, JSON.parse(JSON.stringify(value)) as unknown);
    },
  };
}

interface SetupOptions {
  channel?: Record<string, unknown>;
  maxAttachmentBytes?: number;
  sendWaitMs?: number;
  state?: AdapterStateStore;
  dataDir?: string;
}

function setup(opts: SetupOptions = {}) {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "wa-adapter-"));
  if (!opts.dataDir) onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
  const config = channelConfig(dataDir, opts.channel);
  const clock = createManualClock();
  const logLines: string[] = [];
  const logger = pino({ level: "trace" }, { write: (line: string) => void logLines.push(line) });
  const qr = textSink();
  const fake = createFakeBaileys();
  const media = createFakeMedia(1024);
  const adapter = createWhatsAppAdapter(
    config,
    {
      logger,
      state: opts.state ?? memoryState(),
      dataDir,
      clock,
      maxAttachmentBytes: opts.maxAttachmentBytes ?? 16 * 1024,
    },
    {
      socketFactory: fake.factory,
      qrOutput: qr.stream,
      random: seededRandom("wa-test"),
      mediaDownloader: media.downloader,
      ...(opts.sendWaitMs !== undefined ? { sendWaitMs: opts.sendWaitMs } : {}),
    },
  );
  const authDir = config.authDir;
  return { adapter, fake, clock, config, qr, media, logs: () => logLines.join(""), authDir, dataDir };
}

/** Starts the adapter and opens its first socket. */
async function startConnected(env: ReturnType<typeof setup>, sink = recordingSink()) {
  const started = env.adapter.start(sink);
  await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(1));
  env.fake.latest().open();
  await started;
  return sink;
}

const targetOf = (m: InboundMessage): ChatTarget => ({
  platform: m.platform,
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  replyToMessageId: m.messageId,
});

describe("WhatsApp adapter: linking and connection lifecycle", () => {
  it("draws the QR code on the qr output on first link and reports pairing, keeping it out of the log", async () => {
    const env = setup();
    const sink = recordingSink();
    const started = env.adapter.start(sink);
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(1));
    const code = env.fake.latest().showQr();
    await started; // resolves while pairing

    let expected = "";
    qrcodeTerminal.generate(code, { small: true }, (art) => (expected = art));
    expect(expected.length).toBeGreaterThan(100);
    expect(env.qr.text()).toContain(expected);
    expect(sink.states()).toEqual(["starting", "pairing"]);
    expect(env.logs()).not.toContain(code);
    // The socket is told not to print the QR itself, and gets the on-disk auth state.
    expect(env.fake.latest().config.printQRInTerminal).toBe(false);
    expect(env.fake.latest().config.auth.creds.noiseKey.private).toBeInstanceOf(Uint8Array);
    await env.adapter.stop();
  });

  it("does not draw the QR when printQr is off, but still reports pairing", async () => {
    const env = setup({ channel: { printQr: false } });
    const sink = recordingSink();
    const started = env.adapter.start(sink);
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(1));
    env.fake.latest().showQr();
    await started;
    expect(env.qr.text()).toBe("");
    expect(sink.states()).toContain("pairing");
    await env.adapter.stop();
  });

  it("restarts at once with a new socket on 515 after pairing, the old one ended and detached", async () => {
    const env = setup();
    const sink = recordingSink();
    const started = env.adapter.start(sink);
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(1));
    const first = env.fake.latest();
    first.showQr();
    await started;
    first.updateCreds({ me: { id: pnJid(BOT_ACCOUNT.phone, 7), lid: lidJid(BOT_ACCOUNT.lid, 7) }, registered: true });
    first.close(515, "restart required");

    // No clock movement: the restart is immediate (the loop lets the event loop turn once before it).
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(2));
    expect(first.closed).toBe(true);
    expect(first.subscriptions).toBe(0);
    const second = env.fake.latest();
    expect(second.subscriptions).toBe(1);
    // Same (updated) credentials carried over to the new connection.
    expect(second.config.auth.creds.me?.id).toBe(pnJid(BOT_ACCOUNT.phone, 7));
    second.open();
    expect(sink.states()).toEqual(["starting", "pairing", "reconnecting", "connected"]);
    expect(env.fake.maxAlive()).toBe(1);
    await env.adapter.stop();
  });

  it("a 515 on every connection is a fault, not a pairing: only the first restarts at once, the repeats back off on the clock", async () => {
    const env = setup();
    const sink = recordingSink();
    const started = env.adapter.start(sink);
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(1));
    env.fake.latest().showQr();
    await started;
    env.fake.latest().close(515, "restart required");
    // The restart WhatsApp asks for after pairing: at once.
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(2));

    // Asked again before any socket opened: each repeat waits the growing backoff.
    for (let failures = 0; failures < 3; failures++) {
      env.fake.latest().close(515, "restart required");
      await settle();
      env.clock.advance(backoffCeiling(failures) / 2 - 1);
      await settle();
      expect(env.fake.sockets).toHaveLength(2 + failures);
      env.clock.advance(backoffCeiling(failures) / 2);
      await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(3 + failures));
    }
    const details = sink.statuses.filter((s) => s.state === "reconnecting").map((s) => s.detail);
    expect(details[0]).toBe("restart required after linking");
    expect(details.slice(1)).toEqual(
      [1, 2, 3].map(() => expect.stringMatching(/^restart required after linking \(again, with no working connection in between\); retrying in \d+ s$/)),
    );

    // Once a socket opened, a 515 is the platform's ordinary request again: at once.
    env.fake.latest().open();
    env.fake.latest().close(515, "restart required");
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(6));
    expect(env.fake.maxAlive()).toBe(1);
    await env.adapter.stop();
  });

  it("reconnects after other closes with growing, jittered delays on the clock, never two sockets alive", async () => {
    const env = setup();
    const sink = await startConnected(env);
    const first = env.fake.latest();

    first.close(428, "Connection Closed");
    await settle();
    expect(env.fake.sockets).toHaveLength(1);
    // Delay for attempt n lies in [ceiling/2, ceiling).
    env.clock.advance(backoffCeiling(0) / 2 - 1);
    await settle();
    expect(env.fake.sockets).toHaveLength(1);
    env.clock.advance(backoffCeiling(0) / 2);
    await settle();
    expect(env.fake.sockets).toHaveLength(2);
    expect(first.subscriptions).toBe(0);

    // Second failure in a row without an open in between: the delay grows.
    const second = env.fake.latest();
    second.close(408, "Connection Lost");
    await settle();
    env.clock.advance(backoffCeiling(1) / 2 - 1);
    await settle();
    expect(env.fake.sockets).toHaveLength(2);
    env.clock.advance(backoffCeiling(1) / 2);
    await settle();
    expect(env.fake.sockets).toHaveLength(3);

    // Late events from replaced sockets do nothing.
    first.emit("connection.update", { connection: "close", lastDisconnect: { error: new Error("late"), date: new Date() } });
    second.emit("connection.update", { connection: "open" });
    env.clock.advance(10 * 60_000);
    await settle();
    expect(env.fake.sockets).toHaveLength(3);

    // A successful open resets the backoff.
    const third = env.fake.latest();
    third.open();
    third.close(503, "unavailable");
    await settle();
    env.clock.advance(backoffCeiling(0));
    await settle();
    expect(env.fake.sockets).toHaveLength(4);

    expect(env.fake.maxAlive()).toBe(1);
    expect(env.fake.alive()).toHaveLength(1);
    expect(sink.states().filter((s) => s === "reconnecting")).toHaveLength(3);
    await env.adapter.stop();
  });

  it("on 401 stops for good: auth cleared, status logged_out, a new link asked for, no more sockets", async () => {
    const env = setup();
    const sink = await startConnected(env);
    const socket = env.fake.latest();
    socket.updateCreds({ me: { id: pnJid(BOT_ACCOUNT.phone, 7) }, registered: true });
    await vi.waitFor(() => expect(readdirSync(env.authDir)).toContain("creds.json"));
    writeFileSync(join(env.authDir, "pre-key-1.json"), "{}");
    writeFileSync(join(env.authDir, "README.txt"), "not ours");

    socket.close(401, "Connection Failure");
    await settle();
    await vi.waitFor(() => expect(sink.states()).toContain("logged_out"));
    expect(readdirSync(env.authDir).filter((n) => n.endsWith(".json"))).toEqual([]);
    expect(readdirSync(env.authDir)).toContain("README.txt"); // only Baileys' files go
    expect(env.qr.text()).toMatch(/logged out.*link it again/s);
    expect(env.logs()).toMatch(/logged out/);

    env.clock.advance(60 * 60_000);
    await settle();
    expect(env.fake.sockets).toHaveLength(1);
    expect(socket.logoutCalls).toBe(0);
    const sent = env.adapter.send({ platform: "whatsapp", accountId: "wa", chatId: pnJid(ANA), chatType: "direct" }, "hi", { format: "plain" });
    await expect(sent).rejects.toMatchObject({ reason: "logged_out", permanent: true });
    await env.adapter.stop(); // idempotent on a logged-out channel
  });

  it("after a logout, starting again links afresh with new credentials", async () => {
    const env = setup();
    await startConnected(env);
    const oldKey = Buffer.from(env.fake.latest().config.auth.creds.noiseKey.private).toString("hex");
    env.fake.latest().close(401);
    await settle();
    await vi.waitFor(() => expect(readdirSync(env.authDir).filter((n) => n.endsWith(".json"))).toEqual([]));
    const sink = recordingSink();
    const restarted = env.adapter.start(sink);
    await vi.waitFor(() => expect(env.fake.sockets).toHaveLength(2));
    env.fake.latest().showQr();
    await restarted;
    expect(Buffer.from(env.fake.latest().config.auth.creds.noiseKey.private).toString("hex")).not.toBe(oldKey);
    await env.adapter.stop();
  });

  it("stops with failed on 440 (session replaced) instead of fighting the other client", async () => {
    const env = setup();
    const sink = await startConnected(env);
    env.fake.latest().close(440, "conflict");
    await settle();
    expect(sink.states().at(-1)).toBe("failed");
    env.clock.advance(60 * 60_000);
    await settle();
    expect(env.fake.sockets).toHaveLength(1);
  });

  it("stop() is idempotent, ends the socket without logging out, and cancels a pending reconnect", async () => {
    const env = setup();
    const sink = await startConnected(env);
    const first = env.fake.latest();
    first.close(428);
    await settle();
    await Promise.all([env.adapter.stop(), env.adapter.stop()]);
    await env.adapter.stop();
    env.clock.advance(60 * 60_000);
    await settle();
    expect(env.fake.sockets).toHaveLength(1);
    expect(sink.states().filter((s) => s === "stopped")).toHaveLength(1);

    const env2 = setup();
    await startConnected(env2);
    const live = env2.fake.latest();
    await env2.adapter.stop();
    expect(live.closed).toBe(true);
    expect(live.endCalls).toHaveLength(1);
    expect(live.logoutCalls).toBe(0);
    expect(live.subscriptions).toBe(0);
  });

  it("writes the auth state to the auth dir on creds.update, owner-only, without logging key material", async () => {
    const env = setup();
    await startConnected(env);
    const socket = env.fake.latest();
    socket.updateCreds({ me: { id: pnJid(BOT_ACCOUNT.phone, 7), name: "Agent" }, registered: true });
    const credsPath = join(env.authDir, "creds.json");
    await vi.waitFor(() => {
      const saved = JSON.parse(readFileSync(credsPath, "utf8"), BufferJSON.reviver) as { me?: { id?: string }; registered?: boolean };
      expect(saved.me?.id).toBe(pnJid(BOT_ACCOUNT.phone, 7));
      expect(saved.registered).toBe(true);
    });
    const saved = JSON.parse(readFileSync(credsPath, "utf8"), BufferJSON.reviver) as { noiseKey: { private: Uint8Array } };
    const priv = Buffer.from(socket.config.auth.creds.noiseKey.private);
    expect(Buffer.from(saved.noiseKey.private).equals(priv)).toBe(true);
    expect(statSync(env.authDir).mode & 0o077).toBe(0);
    expect(statSync(credsPath).mode & 0o077).toBe(0);
    expect(env.authDir).toBe(join(env.dataDir, "whatsapp", "wa"));
    // Signal keys written through the auth state land in the same folder.
    await socket.config.auth.keys.set({ "pre-key": { "7": { public: new Uint8Array(32), private: new Uint8Array(32) } } });
    expect(readdirSync(env.authDir)).toContain("pre-key-7.json");

    const logs = env.logs();
    expect(logs).not.toContain(priv.toString("base64"));
    expect(logs).not.toContain(Buffer.from(socket.config.auth.creds.signedIdentityKey.private).toString("base64"));
    await env.adapter.stop();
  });
});

describe("WhatsApp adapter: inbound messages", () => {
  it("never answers its own messages or history (append upserts, history sync)", async () => {
    const env = setup({ channel: { access: { mode: "open" } } });
    const sink = await startConnected(env);
    const socket = env.fake.latest();
    socket.receive([ownMessage(pnJid(ANA), "my own words")]);
    socket.receive([directByPhone(ANA, "old, from history")], "append");
    socket.history([directByPhone(ANA, "older, from history sync")]);
    // The adapter's own send comes back from Baileys as an "append" upsert.
    await env.adapter.send({ platform: "whatsapp", accountId: "wa", chatId: pnJid(ANA), chatType: "direct" }, "a reply", { format: "plain" });
    socket.receive([directByPhone(ANA, "live message")]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(1));
    expect(sink.accepted[0]?.text).toBe("live message");
  });

  it("delivers a direct message by phone with ids, name, time, and acknowledges it after accept", async () => {
    const env = setup({ channel: { access: { users: [`+${ANA}`] } } });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered = 0;
    const sink = await startConnected(
      env,
      recordingSink(() => {
        entered++;
        return gate;
      }),
    );
    const socket = env.fake.latest();
    const msg = directByPhone(ANA, "hello bot", { pushName: "Ana", timestamp: 1_767_225_700 });
    socket.receive([msg]);
    await vi.waitFor(() => expect(entered).toBe(1));
    expect(socket.reads).toHaveLength(0); // not before the core has journaled it
    release();
    await vi.waitFor(() => expect(socket.reads).toHaveLength(1));
    expect(socket.reads[0]?.[0]?.id).toBe(msg.key.id);
    expect(sink.accepted[0]).toEqual({
      platform: "whatsapp",
      accountId: "wa",
      chatId: pnJid(ANA),
      chatType: "direct",
      userId: `+${ANA}`,
      userName: "Ana",
      messageId: msg.key.id,
      text: "hello bot",
      sentAt: 1_767_225_700_000,
    });
  });

  it("does not acknowledge a message the core refused, and offers it again on the next connection", async () => {
    const env = setup({ channel: { access: { users: [`+${ANA}`] } } });
    let calls = 0;
    const sink = await startConnected(
      env,
      recordingSink(async () => {
        if (++calls === 1) throw new Error("journal full");
      }),
    );
    const socket = env.fake.latest();
    const refused = directByPhone(ANA, "first");
    const taken = directByPhone(ANA, "second");
    socket.receive([refused, taken]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(1));
    await vi.waitFor(() => expect(socket.reads).toHaveLength(1));
    expect(socket.reads[0]?.[0]?.id).toBe(taken.key.id);

    socket.close(428);
    await settle();
    env.clock.advance(backoffCeiling(0));
    await settle();
    const next = env.fake.latest();
    next.open();
    await vi.waitFor(() => expect(sink.accepted.map((m) => m.text)).toEqual(["second", "first"]));
    await vi.waitFor(() => expect(next.reads.flat().map((k) => k.id)).toEqual([refused.key.id]));
    // Offered once more only: once accepted it is forgotten.
    next.close(428);
    await settle();
    env.clock.advance(backoffCeiling(0));
    await settle();
    env.fake.latest().open();
    env.fake.latest().receive([directByPhone(ANA, "third")]);
    await vi.waitFor(() => expect(sink.accepted.map((m) => m.text)).toEqual(["second", "first", "third"]));
    await env.adapter.stop();
  });

  it("keeps messages refused while the daemon stops and delivers them after a restart", async () => {
    const state = memoryState();
    const env = setup({ state });
    let stopping = false;
    await startConnected(
      env,
      recordingSink(async () => {
        if (stopping) throw new Error("stopping");
      }),
    );
    stopping = true;
    const doc = Buffer.alloc(2000, 3);
    const late = env.media.put(documentFrom(ANA, "late.pdf", doc, { caption: "arrived during shutdown" }), doc);
    env.fake.latest().receive([late]);
    await env.adapter.stop();
    expect(env.fake.latest().reads).toHaveLength(0);
    expect(state.data.size).toBe(1);

    // A new process: same data dir and adapter state.
    const again = setup({ state, dataDir: env.dataDir });
    again.media.put(late, doc);
    const sink = await startConnected(again);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(1));
    expect(sink.accepted[0]).toMatchObject({ messageId: late.key.id, text: "arrived during shutdown" });
    expect(sink.accepted[0]?.attachments?.[0]?.data.equals(doc)).toBe(true);
    await vi.waitFor(() => expect(state.data.size).toBe(0));
    await again.adapter.stop();
  });

  it("identifies an @lid sender by lid and phone, so a phone-number allowlist admits them, and replies to the lid chat", async () => {
    const env = setup({ channel: { access: { users: ["+49 176 2222 2222"] } } });
    const sink = await startConnected(env);
    const socket = env.fake.latest();
    socket.receive([directByLid(LIA_LID, "hi from lid", { phoneAlt: LIA_PHONE, device: 3 })]);
    socket.receive([directByLid("299999999999999", "stranger")]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(2));
    const [lia, stranger] = sink.accepted as [InboundMessage, InboundMessage];
    expect(lia.userId).toBe(`${LIA_LID}@lid`);
    expect(lia.userAliases).toEqual([`+${LIA_PHONE}`]);
    expect(lia.chatId).toBe(lidJid(LIA_LID));
    expect(checkAccess(env.config.access, lia)).toEqual({ allowed: true });
    expect(stranger.userAliases).toBeUndefined();
    expect(checkAccess(env.config.access, stranger).allowed).toBe(false);

    await env.adapter.send(targetOf(lia), "hello Lia", { format: "plain" });
    expect(socket.sent).toEqual([{ jid: lidJid(LIA_LID), content: { text: "hello Lia" } }]);
  });

  it("puts a phone-addressed sender's lid (remoteJidAlt) in the aliases, so a lid allowlist admits them", async () => {
    const env = setup({ channel: { access: { users: [`${LIA_LID}@lid`] } } });
    const sink = await startConnected(env);
    env.fake.latest().receive([directByPhone(LIA_PHONE, "by phone", { lidAlt: LIA_LID })]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(1));
    const m = sink.accepted[0]!;
    expect(m.userId).toBe(`+${LIA_PHONE}`);
    expect(m.userAliases).toEqual([`${LIA_LID}@lid`]);
    expect(checkAccess(env.config.access, m)).toEqual({ allowed: true });
  });

  it("in groups says which messages address the bot (mentioned by lid or phone, or replied to); the core applies the group's rule", async () => {
    const quiet = "120363000000000009@g.us";
    const env = setup({
      channel: { access: { mode: "open", groups: { [quiet]: { requireMention: false } } } },
    });
    const sink = await startConnected(env);
    const socket = env.fake.latest();
    const gus = lidJid("230000000000007");
    socket.receive([
      groupText(GROUP, gus, "just chatting", { participantAlt: pnJid("4915333333333") }),
      groupText(GROUP, gus, "@someoneelse look", { mentions: [lidJid("240000000000000")] }),
      groupText(GROUP, gus, `@${BOT_ACCOUNT.lid} what is 2+2?`, { mentions: [lidJid(BOT_ACCOUNT.lid)], participantAlt: pnJid("4915333333333") }),
      groupText(GROUP, pnJid("4915444444444"), `@${BOT_ACCOUNT.phone}, and 3+3?`, { mentions: [pnJid(BOT_ACCOUNT.phone)] }),
      groupText(GROUP, gus, "thanks! and 4+4?", { replyTo: { participant: pnJid(BOT_ACCOUNT.phone), stanzaId: "BOTMSG1" } }),
      groupText(GROUP, gus, "reply to someone else", { replyTo: { participant: pnJid("4915555555555"), stanzaId: "X1" } }),
      groupText(quiet, gus, "no mention needed here"),
    ]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(7));
    expect(sink.accepted.filter((m) => m.mentioned).map((m) => [m.chatId, m.text])).toEqual([
      [GROUP, "what is 2+2?"],
      [GROUP, "and 3+3?"],
      [GROUP, "thanks! and 4+4?"],
    ]);
    expect(sink.accepted.filter((m) => m.mentioned === false).map((m) => m.text)).toEqual([
      "just chatting",
      "@someoneelse look",
      "reply to someone else",
      "no mention needed here",
    ]);
    const first = sink.accepted.find((m) => m.mentioned)!;
    expect(first.chatType).toBe("group");
    expect(first.userId).toBe("230000000000007@lid");
    expect(first.userAliases).toEqual(["+4915333333333"]);

    // The reply goes to the group, quoting the message it answers.
    await env.adapter.send(targetOf(first), "4", { format: "plain" });
    const sent = socket.sent.at(-1)!;
    expect(sent.jid).toBe(GROUP);
    expect(sent.options?.quoted?.key.id).toBe(first.messageId);
  });

  it("downloads documents and images within the size bound, with captions as text", async () => {
    const env = setup({ channel: { access: { mode: "open" } }, maxAttachmentBytes: 16 * 1024 });
    const sink = await startConnected(env);
    const pdf = Buffer.alloc(10_000, 7);
    const jpg = Buffer.alloc(3000, 9);
    env.fake
      .latest()
      .receive([env.media.put(documentFrom(ANA, "../../etc/report.pdf", pdf, { caption: "summarise this" }), pdf), env.media.put(imageFrom(ANA, jpg), jpg)]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(2));
    const [doc, img] = sink.accepted as [InboundMessage, InboundMessage];
    expect(doc.text).toBe("summarise this");
    expect(doc.attachments).toHaveLength(1);
    expect(doc.attachments?.[0]).toMatchObject({ kind: "document", fileName: "report.pdf", mimeType: "application/pdf" });
    expect(doc.attachments?.[0]?.data.equals(pdf)).toBe(true);
    expect(img.text).toBe("");
    expect(img.attachments?.[0]).toMatchObject({ kind: "photo", mimeType: "image/jpeg" });
    expect(img.attachments?.[0]?.fileName).toMatch(/^photo-.+\.jpg$/);
    expect(img.attachments?.[0]?.data.equals(jpg)).toBe(true);
  });

  it("refuses attachments over the bound (declared or actual) and says so in the message text", async () => {
    const env = setup({ channel: { access: { mode: "open" } }, maxAttachmentBytes: 16 * 1024 });
    const sink = await startConnected(env);
    const big = Buffer.alloc(40_000, 1);
    env.fake.latest().receive([env.media.put(documentFrom(ANA, "big.pdf", big), big)]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(1));
    expect(env.media.state.downloads).toBe(0); // the declared size was enough to refuse
    expect(sink.accepted[0]?.attachments).toBeUndefined();
    expect(sink.accepted[0]?.text).toMatch(/big\.pdf.*not delivered.*limit/);

    // A message that understates its size is cut off while downloading.
    env.fake.latest().receive([env.media.put(documentFrom(ANA, "liar.pdf", big, { declaredBytes: 100 }), big)]);
    await vi.waitFor(() => expect(sink.accepted).toHaveLength(2));
    expect(env.media.state.downloads).toBe(1);
    expect(env.media.state.bytesServed).toBeLessThan(big.length);
    expect(sink.accepted[1]?.attachments).toBeUndefined();
    expect(sink.accepted[1]?.text).toMatch(/liar\.pdf.*not delivered/);
  });
});

describe("WhatsApp adapter: sending", () => {
  it("sends text through sendMessage, rendering markdown as WhatsApp markup when asked", async () => {
    const env = setup();
    await startConnected(env);
    const socket = env.fake.latest();
    const target: ChatTarget = { platform: "whatsapp", accountId: "wa", chatId: pnJid(ANA), chatType: "direct" };
    await env.adapter.send(target, "**bold** and `**code**`", { format: "markdown" });
    await env.adapter.send(target, "**as is**", { format: "plain" });
    expect(socket.sent.map((s) => [s.jid, s.content.text])).toEqual([
      [pnJid(ANA), "*bold* and `**code**`"],
      [pnJid(ANA), "**as is**"],
    ]);
    expect(env.adapter.limits).toEqual({ maxMessageLength: 4000, typingRefreshMs: 10_000 });
  });

  it("waits for a dropped connection to come back before sending, and rejects if it does not in time", async () => {
    const env = setup({ sendWaitMs: 120_000 });
    await startConnected(env);
    env.fake.latest().close(428);
    await settle();
    const target: ChatTarget = { platform: "whatsapp", accountId: "wa", chatId: pnJid(ANA), chatType: "direct" };
    const pending = env.adapter.send(target, "after reconnect", { format: "plain" });
    env.clock.advance(backoffCeiling(0));
    await settle();
    expect(env.fake.sockets).toHaveLength(2);
    env.fake.latest().open();
    await pending;
    expect(env.fake.sockets[0]?.sent).toEqual([]);
    expect(env.fake.latest().sent.map((s) => s.content.text)).toEqual(["after reconnect"]);

    env.fake.latest().close(428);
    await settle();
    const late = env.adapter.send(target, "never", { format: "plain" });
    const settled = late.catch((e: unknown) => e);
    env.clock.advance(120_000); // reconnects but never opens
    await settle();
    const err = await settled;
    expect(err).toBeInstanceOf(WhatsAppAdapterError);
    expect(err).toMatchObject({ reason: "not_connected", permanent: false });
    await env.adapter.stop();
  });

  it("rejects with send_failed when Baileys fails, and sends typing best effort", async () => {
    const env = setup();
    await startConnected(env);
    const socket = env.fake.latest();
    const target: ChatTarget = { platform: "whatsapp", accountId: "wa", chatId: GROUP, chatType: "group" };
    socket.failNextSend();
    await expect(env.adapter.send(target, "x", { format: "plain" })).rejects.toMatchObject({ reason: "send_failed", permanent: false });
    await env.adapter.sendTyping(target);
    expect(socket.presence).toEqual([{ type: "composing", jid: GROUP }]);
    socket.close(428);
    await settle();
    await expect(env.adapter.sendTyping(target)).resolves.toBeUndefined();
    await env.adapter.stop();
  });
});
