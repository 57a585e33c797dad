/**
 * The upgrade to the one thread rule loses no one's conversation. A data
 * directory (the file journal) or a PostgreSQL database holds a thread's
 * session under the key the daemon before the rule gave it: Telegram topics
 * (unchanged), Discord threads (the thread's channel as the chat), Slack
 * threads (`<channel>:<ts>` as the chat). Those keys come from that daemon's
 * own code (test/fixtures/threads-before/keys.json, made by make.mjs from the
 * old tree), never hand-written here. The session state is a real chain: its
 * first turn is answered by the emulator before the upgrade. After it, the
 * thread's next message, translated by today's code, continues that chain:
 * the fake model's `!recall` answers with the first turn's words, and the
 * reply goes back into the thread. The move happens once: a second message
 * finds the session under its new key.
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { z } from "zod";
import { translateMessage as discordMessage } from "../../daemon/adapters/discord/inbound.js";
import { translateMessage as slackMessage } from "../../daemon/adapters/slack/inbound.js";
import { translateMessage as telegramMessage } from "../../daemon/adapters/telegram/inbound.js";
import { scheduleSchema } from "../../daemon/config/schedules.js";
import { stateSchema } from "../../daemon/config/schema.js";
import { cronOf, nextSlot } from "../../daemon/core/schedules/slots.js";
import { effectiveScope, sessionBaseFor } from "../../daemon/core/routing.js";
import { toolDeclarations } from "../../daemon/core/questions/tools.js";
import { createDaemon } from "../../daemon/daemon.js";
import { testHandle } from "../../daemon/test-handle.js";
import { migrate } from "../../daemon/state/postgres/migrations.js";
import { openStore } from "../../daemon/state/store.js";
import type { ChatAdapter, ChatTarget, InboundMessage, InboundSink } from "../../daemon/vocabulary/adapter.js";
import { accountKeyOf } from "../../daemon/vocabulary/keys.js";
import { createServiceClient } from "../../shared/client/index.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { lacks } from "../helpers/system-programs.js";
import { waitUntil } from "../helpers/wait.js";

const Case = z.object({
  platform: z.enum(["telegram", "discord", "slack"]),
  accountId: z.string(),
  first: z.unknown(),
  followUp: z.unknown(),
  before: z.object({ message: z.object({ chatId: z.string() }).loose(), sessionBase: z.string(), chatKey: z.string() }),
});
const fixture = z
  .object({ madeBy: z.string(), cases: z.array(Case) })
  .parse(JSON.parse(readFileSync(new URL("../fixtures/threads-before/keys.json", import.meta.url), "utf8")));
type Case = z.infer<typeof Case>;

/** Today's translation of a raw platform message of the fixture (the raw shapes are the platforms' own). */
function translateNow(c: Case, raw: unknown): InboundMessage {
  const message =
    c.platform === "telegram"
      ? telegramMessage(raw as Parameters<typeof telegramMessage>[0], { id: 900, username: "bridge_bot" }, c.accountId)
      : c.platform === "discord"
        ? discordMessage(raw as Parameters<typeof discordMessage>[0], {
            accountId: c.accountId,
            bot: { id: "1500000000000000900", name: "bridge", roleIds: [] },
          })
        : (() => {
            const d = slackMessage(raw as Parameters<typeof slackMessage>[0], { accountId: c.accountId, bot: { userId: "U0BOT0001", name: "bridge" } });
            return d.kind === "accept" ? d.message : undefined;
          })();
  if (!message) throw new Error(`${c.platform}: today's code takes no message from the fixture`);
  return message;
}

const CHANNELS = {
  telegram: { type: "telegram", id: "tg", token: "987654321:ZZZyyyXXXwwwVVVuuuTTTsssRRRqqqPPPoo" },
  discord: { type: "discord", id: "dc", token: "MTUwMDAwMDAwMDAwMDAwMDkwMA.GAbCdE.upgrade-test-token-not-real-000000000" },
  slack: { type: "slack", id: "sl", botToken: "xoxb-1111-2222-upgradeTestToken", signingSecret: "upgradeTestSigningSecret0123456789" },
} as const;

/** The adapter of the account: hands the test's messages to the daemon and keeps what it sends. */
function recordingAdapter(platform: string, accountId: string) {
  const sent: { target: ChatTarget; text: string }[] = [];
  let sink: InboundSink | undefined;
  const adapter: ChatAdapter = {
    platform,
    accountId,
    limits: { maxMessageLength: 4000, typingRefreshMs: 0 },
    redelivers: false,
    async start(s) {
      sink = s;
    },
    async stop() {},
    measure: (text) => text.length,
    async send(target, text) {
      sent.push({ target, text });
    },
    async sendTyping() {},
  };
  const accept = (message: InboundMessage) => {
    if (!sink) throw new Error("not started");
    return sink.accept(message);
  };
  return { adapter, sent, accept, started: () => sink !== undefined };
}

let server: TestPostgres | undefined;
const noPostgres = lacks("postgres", import.meta.url);
beforeAll(async () => {
  if (!noPostgres) server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

/** Where the old session is written before the daemon starts, and the state section that reads it. */
type Backend = (c: Case, dataDir: string, key: string, state: object, question?: QuestionIndex) => Promise<{ state?: z.input<typeof stateSchema> }>;
/** An open question's expiry as that daemon indexed it (kv namespace "questions"). */
type QuestionIndex = { key: string; entry: object };

const fileBackend: Backend = async (_c, dataDir, key, state, question) => {
  const store = await openStore({ dataDir, clock: systemClock });
  // The journal's session record has not changed with the rule: only the key it is written under did.
  await store.setSession(key as Parameters<typeof store.setSession>[0], { generation: 0, ...state });
  if (question) await store.kv("questions").set(question.key, question.entry);
  await store.close();
  return {};
};

const postgresBackend: Backend = async (c, _dataDir, key, state, question) => {
  if (!server) throw new Error("no PostgreSQL");
  const url = await server.createDatabase("threads");
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  onTestFinished(() => pool.end());
  await migrate(pool);
  // The row as the daemon before the rule wrote it: the session key, the account's unit, the state.
  await pool.query("INSERT INTO session (base, unit, state) VALUES ($1, $2, $3)", [
    key,
    accountKeyOf(c.platform, c.accountId),
    JSON.stringify({ generation: 0, ...state }),
  ]);
  // A kv row as unit-state.ts writes it: the key as its JSON.
  if (question)
    await pool.query("INSERT INTO kv (unit, ns, k, v) VALUES ($1, 'questions', $2, $3)", [
      accountKeyOf(c.platform, c.accountId),
      JSON.stringify(question.key),
      JSON.stringify(question.entry),
    ]);
  return { state: { kind: "postgres", url, nodeId: "upgraded", leaseTtlMs: 3_000, pollMs: 100 } };
};

async function upgradeContinues(c: Case, backend: Backend): Promise<void> {
  const service = await startServiceFixture("thread-upgrade-");
  const base = service.configFor({ ...CHANNELS[c.platform], access: { mode: "open" } });
  // Before the upgrade: a real first turn, in the service session the old daemon would have used.
  const client = createServiceClient({ baseUrl: service.baseUrl, apiKey: base.service.apiKey });
  const first = await client.createSessionResponse({
    instance_id: service.instanceId,
    session_id: c.before.sessionBase,
    body: { model: base.service.defaultModel, input: "the word is plum" },
  });
  const oldKey = `${service.instanceId} ${c.before.sessionBase}`;
  const { state } = await backend(c, service.dataDir, oldKey, { lastResponseId: first.id, sessionId: c.before.sessionBase });

  const { adapter, sent, accept } = recordingAdapter(c.platform, c.accountId);
  const daemon = createDaemon({
    config: { ...base, ...(state ? { state: stateSchema.parse(state) } : {}) },
    adapters: [adapter],
    logger: pino({ level: "silent" }),
    random: seededRandom(3),
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();

  const next = translateNow(c, c.followUp);
  expect(next.text).toBe("!recall");
  await waitUntil(async () => (await accept(next)).status === "accepted", "the follow-up taken (once the account is held)");
  const reply = await waitUntil(() => sent.find((s) => s.text.includes("plum")), "the recalled first turn");
  // The thread the message came from is where the answer goes.
  expect(reply.target).toMatchObject({ chatId: next.chatId, threadId: next.threadId });

  // Once: the session lives under the new key now, so the next message continues from there.
  const newBase = sessionBaseFor(next, effectiveScope(undefined, next));
  if (c.platform !== "telegram") expect(newBase).not.toBe(c.before.sessionBase);
  const again = translateNow(c, { ...(c.followUp as object), ...idOf(c, "again") });
  await waitUntil(async () => (await accept(again)).status === "accepted", "a second follow-up taken");
  await waitUntil(() => sent.filter((s) => s.text.includes("plum")).length === 2, "the chain recalled again");
}

/**
 * A schedule naming the thread (its chat and `threadId`, as `/whoami` shows them now) fires before
 * anyone writes there after the upgrade: its prompt goes on the thread's stored chain (the same
 * service session, the first turn's response as its parent), so the thread's next message finds
 * that conversation under its new key and continues it too, instead of the old one being lost.
 */
async function scheduleFiresFirst(c: Case, backend: Backend): Promise<void> {
  const service = await startServiceFixture("thread-schedule-");
  const base = service.configFor({ ...CHANNELS[c.platform], access: { mode: "open" } });
  const client = createServiceClient({ baseUrl: service.baseUrl, apiKey: base.service.apiKey });
  const first = await client.createSessionResponse({
    instance_id: service.instanceId,
    session_id: c.before.sessionBase,
    body: { model: base.service.defaultModel, input: "the word is plum" },
  });
  const oldKey = `${service.instanceId} ${c.before.sessionBase}`;
  const { state } = await backend(c, service.dataDir, oldKey, { lastResponseId: first.id, sessionId: c.before.sessionBase });

  const next = translateNow(c, c.followUp);
  const hourly = "0 * * * *";
  const schedule = scheduleSchema.parse({
    id: "digest",
    cron: hourly,
    timeZone: "UTC",
    channel: CHANNELS[c.platform].id,
    chatId: next.chatId,
    ...(next.threadId !== undefined ? { threadId: next.threadId } : {}),
    chatType: next.chatType,
    prompt: "!recall",
  });
  const { adapter, sent, accept } = recordingAdapter(c.platform, c.accountId);
  const clock = createSteppableClock();
  const daemon = createDaemon({
    config: { ...base, schedules: [schedule], ...(state ? { state: stateSchema.parse(state) } : {}) },
    adapters: [adapter],
    logger: pino({ level: "silent" }),
    random: seededRandom(3),
    clock,
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();

  await waitUntil(() => testHandle(daemon).schedules?.nextCheck(schedule.id) !== undefined, "the schedule's timer (once the account is held)");
  clock.advance(nextSlot(cronOf(hourly, "UTC"), clock.now())! - clock.now() + 1000);
  const answered = await waitUntil(() => sent[0], "the scheduled prompt answered");
  expect(answered.target).toMatchObject({ chatId: next.chatId, threadId: next.threadId });
  const responses = () => Object.values(service.emulator.emulator.store.data.gateway.responses);
  const scheduled = responses().find((r) => r.input_text.includes("!recall"));
  // The thread's own conversation: the service session it had, its chain's last response the parent.
  expect(scheduled).toMatchObject({ session: c.before.sessionBase, parent_id: first.id });
  expect(answered.text).toContain("plum");

  // The thread's next message continues that same conversation (the move was not left behind a fresh session).
  expect(next.text).toBe("!recall");
  await waitUntil(async () => (await accept(next)).status === "accepted", "the follow-up taken");
  await waitUntil(() => sent.filter((s) => s.text.includes("plum")).length === 2, "the chain recalled again from the thread");
  const followed = responses().filter((r) => r.input_text.includes("!recall") && r.id !== scheduled?.id);
  expect(followed).toEqual([expect.objectContaining({ session: c.before.sessionBase, parent_id: scheduled?.id })]);
}

/**
 * Two messages of the thread at once, the first after the upgrade: both find the session under
 * its former key, one moves it (once: the log says so once), and both are answered in the one
 * moved chain, in the order they came, neither lost.
 */
async function twoAtOnce(c: Case, backend: Backend): Promise<void> {
  const service = await startServiceFixture("thread-upgrade-race-");
  const base = service.configFor({ ...CHANNELS[c.platform], access: { mode: "open" } });
  const client = createServiceClient({ baseUrl: service.baseUrl, apiKey: base.service.apiKey });
  const first = await client.createSessionResponse({
    instance_id: service.instanceId,
    session_id: c.before.sessionBase,
    body: { model: base.service.defaultModel, input: "the word is plum" },
  });
  const { state } = await backend(c, service.dataDir, `${service.instanceId} ${c.before.sessionBase}`, {
    lastResponseId: first.id,
    sessionId: c.before.sessionBase,
  });
  const logged: string[] = [];
  const { adapter, sent, accept, started } = recordingAdapter(c.platform, c.accountId);
  const daemon = createDaemon({
    config: { ...base, ...(state ? { state: stateSchema.parse(state) } : {}) },
    adapters: [adapter],
    logger: pino({ level: "info" }, { write: (line: string) => void logged.push(line) }),
    random: seededRandom(3),
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();

  const one = translateNow(c, c.followUp);
  const two = translateNow(c, { ...(c.followUp as object), ...idOf(c, "again") });
  // Once the account is held (PostgreSQL: its adapter started): both handed over in the same tick.
  await waitUntil(started, "the account held");
  const outcomes = await Promise.all([accept(one), accept(two)]);
  expect(outcomes.map((o) => o.status)).toEqual(["accepted", "accepted"]);
  const replies = await waitUntil(() => {
    const recalled = sent.filter((s) => s.text.includes("plum"));
    return recalled.length === 2 ? recalled : undefined;
  }, "both answered from the moved chain");
  for (const r of replies) expect(r.target).toMatchObject({ chatId: one.chatId, threadId: one.threadId });
  // In the order they came: the second answer's chain holds the first's turn.
  expect(replies[0]?.text).not.toContain("!recall");
  expect(replies[1]?.text).toContain("!recall");
  expect(logged.filter((l) => l.includes("session moved to its thread's new key"))).toHaveLength(1);
}

/** A raw message's own id, changed (a second message of the thread). */
const idOf = (c: Case, suffix: string): object =>
  c.platform === "telegram" ? { message_id: 103 } : c.platform === "discord" ? { id: `1600000000000000003` } : { ts: `1700000019.000${suffix.length}00` };

/**
 * A thread's question left open before the upgrade: a command in the thread moves the session
 * (closing nothing), then the question expires. The expiry reaches the moved conversation, in the
 * thread, once: the agent hears there was no answer, on the chain that asked.
 */
async function openQuestionExpiresInThread(c: Case, backend: Backend): Promise<void> {
  const { sent, accept, clock, daemon } = await questionLeftOpen(c, backend);

  const command = translateNow(c, { ...(c.followUp as object), ...idOf(c, "status"), content: "<@1500000000000000900> /status" });
  await waitUntil(async () => (await accept(command)).status === "accepted", "the command taken (once the account is held)");
  await waitUntil(() => sent.some((s) => s.target.threadId === command.threadId), "the status shown in the thread");

  clock.advance(60 * 60_000);
  const told = await waitUntil(() => sent.find((s) => /returned: No answer/.test(s.text)), "the agent told there was no answer");
  expect(told.target).toMatchObject({ chatId: command.chatId, threadId: command.threadId });
  // Once: nothing else expires (the former copy holds no open question).
  clock.advance(120 * 60_000);
  await daemon.stop({ graceMs: 1_000 });
  expect(sent.filter((s) => /returned: No answer/.test(s.text))).toHaveLength(1);
}

/**
 * The same question expiring before anything moved the thread's session: it closes on the former
 * key (where it lives) in the former chat, and the thread's next message moves the chain as the
 * expiry left it, so the conversation goes on from the expiry's answer.
 */
async function openQuestionExpiresFirst(c: Case, backend: Backend): Promise<void> {
  const { service, asked, sent, accept, clock, daemon } = await questionLeftOpen(c, backend);
  await waitUntil(() => testHandle(daemon).store !== undefined && testHandle(daemon).scheduler !== undefined, "the daemon started");
  clock.advance(60 * 60_000);
  const told = await waitUntil(() => sent.find((s) => /returned: No answer/.test(s.text)), "the agent told there was no answer");
  expect(told.target).toMatchObject({ chatId: c.before.message.chatId });
  const responses = () => Object.values(service.emulator.emulator.store.data.gateway.responses);
  // The expiry's turn answers the question on the chain that asked it.
  const expiry = await waitUntil(() => responses().find((r) => r.parent_id === asked.id), "the expiry's turn on the service");
  expect(expiry.session).toBe(c.before.sessionBase);

  const next = translateNow(c, c.followUp);
  await waitUntil(async () => (await accept(next)).status === "accepted", "the follow-up taken");
  const followed = await waitUntil(() => responses().find((r) => r.input_text.includes("!recall")), "the follow-up's turn on the service");
  expect(followed).toMatchObject({ session: c.before.sessionBase, parent_id: expiry.id });
  await waitUntil(() => sent.some((s) => s.target.threadId === next.threadId), "the follow-up answered in the thread");
}

/** A Discord thread's question asked before the upgrade, still open, and a daemon of today started on that state. */
async function questionLeftOpen(c: Case, backend: Backend) {
  const service = await startServiceFixture("thread-question-");
  const base = service.configFor({ ...CHANNELS[c.platform], access: { mode: "open" } });
  const client = createServiceClient({ baseUrl: service.baseUrl, apiKey: base.service.apiKey });
  const asked = await client.createSessionResponse({
    instance_id: service.instanceId,
    session_id: c.before.sessionBase,
    body: { model: base.service.defaultModel, input: "!ask Deploy where? | staging | production", tools: toolDeclarations(["choice"]) },
  });
  const call = asked.output.find((i) => i.type === "function_call");
  if (call?.type !== "function_call") throw new Error("the fake model asks with the tool");
  const clock = createSteppableClock();
  const oldKey = `${service.instanceId} ${c.before.sessionBase}`;
  const askerId = c.before.message.userId as string;
  const question = {
    id: "q-before",
    callId: call.call_id,
    tool: "choice",
    text: "Deploy where?",
    options: ["staging", "production"],
    allowText: false,
    askerId,
    askedAt: clock.now(),
    expiresAt: clock.now() + 60 * 60_000,
    otherOutputs: [],
  };
  const { state } = await backend(
    c,
    service.dataDir,
    oldKey,
    { lastResponseId: asked.id, sessionId: c.before.sessionBase, question },
    {
      key: `${c.platform}\u0000${c.accountId}\u0000${question.id}`,
      entry: { key: oldKey, expiresAt: question.expiresAt, chat: { ...c.before.message, userId: askerId } },
    },
  );

  const { adapter, sent, accept } = recordingAdapter(c.platform, c.accountId);
  const daemon = createDaemon({
    config: { ...base, buttons: { ...base.buttons, tools: ["choice"] }, ...(state ? { state: stateSchema.parse(state) } : {}) },
    adapters: [adapter],
    logger: pino({ level: "silent" }),
    random: seededRandom(3),
    clock,
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { service, asked, sent, accept, clock, daemon };
}

describe("a thread's conversation after the upgrade to the one thread rule", () => {
  const discord = fixture.cases.find((c) => c.platform === "discord");
  if (discord) {
    it("expires a Discord thread's question left open before it into the moved conversation, once (file journal)", { timeout: 30_000 }, () =>
      openQuestionExpiresInThread(discord, fileBackend),
    );
    it.skipIf(noPostgres)("expires a Discord thread's question left open before it into the moved conversation, once (PostgreSQL)", { timeout: 30_000 }, () =>
      openQuestionExpiresInThread(discord, postgresBackend),
    );
    it(
      "closes a Discord thread's question expiring before anything moved it on the former key, and the thread goes on from there (file journal)",
      { timeout: 30_000 },
      () => openQuestionExpiresFirst(discord, fileBackend),
    );
    it.skipIf(noPostgres)(
      "closes a Discord thread's question expiring before anything moved it on the former key, and the thread goes on from there (PostgreSQL)",
      { timeout: 30_000 },
      () => openQuestionExpiresFirst(discord, postgresBackend),
    );
  }

  for (const c of fixture.cases) {
    it(`continues a ${c.platform} thread stored by the daemon before it (file journal)`, { timeout: 30_000 }, () => upgradeContinues(c, fileBackend));
    it.skipIf(noPostgres)(`continues a ${c.platform} thread stored by the daemon before it (PostgreSQL)`, { timeout: 30_000 }, () =>
      upgradeContinues(c, postgresBackend),
    );
  }

  for (const c of fixture.cases) {
    it(`continues a ${c.platform} thread's stored conversation when a schedule speaks in it first (file journal)`, { timeout: 30_000 }, () =>
      scheduleFiresFirst(c, fileBackend),
    );
    it.skipIf(noPostgres)(`continues a ${c.platform} thread's stored conversation when a schedule speaks in it first (PostgreSQL)`, { timeout: 30_000 }, () =>
      scheduleFiresFirst(c, postgresBackend),
    );
  }

  for (const c of fixture.cases.filter((c) => c.platform !== "telegram")) {
    it(`moves a ${c.platform} thread once for two messages at once, answering both in order in the moved chain (file journal)`, { timeout: 30_000 }, () =>
      twoAtOnce(c, fileBackend),
    );
    it.skipIf(noPostgres)(
      `moves a ${c.platform} thread once for two messages at once, answering both in order in the moved chain (PostgreSQL)`,
      { timeout: 30_000 },
      () => twoAtOnce(c, postgresBackend),
    );
  }

  it("reads fixtures made by the daemon before the rule, in the shapes it had", () => {
    const [telegram, discord, slack] = fixture.cases;
    expect(fixture.madeBy).toBe("1029eb6");
    expect(telegram?.before.sessionBase).toBe("telegram.tg.group.-1005555.topic.7");
    // A Discord thread was a chat of its own; a Slack thread a chat "<channel>:<ts>".
    expect(discord?.before.message.chatId).toBe("1300000000000000077");
    expect(slack?.before.message.chatId).toBe("C0CHANNEL1:1700000001.000200");
  });
});
