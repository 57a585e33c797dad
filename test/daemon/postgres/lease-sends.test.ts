/**
 * Several machines: an account's replies go out only under its lease. A node
 * that loses the lease while it is still taking the account (its adapter
 * starting, the stored replies being sent again) must send nothing more, even
 * though its hand-over steps wait behind the take; the next owner sends the
 * reply, once. A lease whose deadline has passed counts as lost even before
 * its timer has run (an event loop held past it). Daemons, or the delivery
 * and the cluster store, in this process on a real PostgreSQL server, behind
 * the fake Telegram Bot API.
 */
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it, onTestFinished } from "vitest";
import { createTelegramAdapter } from "../../../daemon/adapters/telegram/index.js";
import { daemonConfigSchema, stateSchema, type DaemonConfig } from "../../../daemon/config/schema.js";
import { createDelivery } from "../../../daemon/core/delivery.js";
import { noMetrics, StoppingError } from "../../../daemon/core/relay-types.js";
import { createClusterStore } from "../../../daemon/state/cluster-store.js";
import { openPostgresState } from "../../../daemon/state/postgres/index.js";
import { monotonicClock } from "../../../daemon/state/postgres/monotonic-clock.js";
import { dedupeKeyOf } from "../../../daemon/vocabulary/keys.js";
import { createServiceClient } from "../../../shared/client/index.js";
import type { Clock } from "../../../shared/clock.js";
import { createDaemon, type Daemon, type DaemonOptions } from "../../../daemon/daemon.js";
import { testHandle } from "../../../daemon/test-handle.js";
import { seededRandom } from "../../../shared/random.js";
import { createFakeTelegram, type FakeUser } from "../../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../../helpers/bridge.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { createSteppableClock } from "../../helpers/steppable-clock.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";

const noPostgres = lacks("postgres", import.meta.url);
const TOKEN = "777001:AAlease-sends-token-0123456789abcde";
const UNIT = "telegram:tg";
const alice: FakeUser = { id: 4201, username: "alice" };

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

it.skipIf(noPostgres)(
  "a node that loses the lease while taking the account sends no stored reply after that; the next owner sends it once",
  { timeout: 60_000 },
  async () => {
    const url = await server.createDatabase("leasesend");
    const service = await startServiceFixture("lease-sends-");
    const fake = await createFakeTelegram({ token: TOKEN });
    onTestFinished(() => fake.close());
    const base = service.configFor({ type: "telegram", id: "tg", token: TOKEN, apiRoot: fake.url, access: { users: [String(alice.id)] } });
    const db = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    const withState = (nodeId: string, pollMs: number): DaemonConfig => ({
      ...base,
      state: stateSchema.parse({ kind: "postgres", url, nodeId, leaseTtlMs: 3_000, pollMs }),
    });
    const node = (config: DaemonConfig, options: Partial<DaemonOptions> = {}): Daemon => {
      const daemon = createDaemon({ config, logger: pino({ level: "silent" }), random: seededRandom(7), ...options });
      onTestFinished(() => daemon.stop({ graceMs: 0 }));
      return daemon;
    };
    const replies = () => fake.sentMessages(alice.id).map((m) => m.text);

    // Node a records the reply; its send reaches Telegram but is never answered nor shown, and a dies.
    const held = fake.stall("sendMessage", 1);
    const a = node(withState("a", 100));
    await a.start();
    fake.privateText(alice, "hello");
    await waitUntil(() => held.arrived() === 1, "a's send of the reply");
    await testHandle(a).crash();
    // Its lease runs out (as it would after leaseTtlMs).
    await db.query("UPDATE lease SET expires_at = clock_timestamp() - interval '1 second' WHERE unit = $1", [UNIT]);

    // Node b takes the account. Its adapter's start waits (a slow connect), while the stored reply
    // goes out again: Telegram asks it to wait a minute (on b's clock) first. Its polls are far
    // apart, so it does not claim the account back during the test.
    fake.inject429("sendMessage", 60, 1);
    let connected = () => {};
    const connect = new Promise<void>((resolve) => {
      connected = resolve;
    });
    const clock = createSteppableClock();
    const b = node(withState("b", 600_000), {
      clock,
      createAdapter: (channel, deps) => {
        if (channel.type !== "telegram") return undefined;
        const adapter = createTelegramAdapter(channel, deps);
        const start = adapter.start.bind(adapter);
        adapter.start = async (sink) => {
          await connect;
          return start(sink);
        };
        return Promise.resolve(adapter);
      },
    });
    await b.start();
    await waitUntil(() => fake.calls("sendMessage") === 2 && clock.delays().some((d) => d >= 60_000), "b's resend waiting out the retry-after");

    // b's lease is lost while the take is still in progress: its renewals are refused from now on
    // (another epoch), and the database's clock passes the expiry b last set, before which b's own
    // deadline lies.
    const { rowCount } = await db.query("UPDATE lease SET epoch = epoch + 1, holder = NULL WHERE unit = $1 AND holder = 'b'", [UNIT]);
    expect(rowCount).toBe(1);
    await waitUntil(
      async () => (await db.query("SELECT expires_at < clock_timestamp() AS past FROM lease WHERE unit = $1", [UNIT])).rows[0]?.past === true,
      "b's lease past",
    );

    // The minute passes and the adapter connects: b, no longer the owner, sends nothing.
    clock.advance(60_000);
    connected();
    await waitUntil(() => {
      const owns = b.health().owns;
      return Array.isArray(owns) && owns.length === 0;
    }, "b giving the account up");
    await testHandle(b).scheduler?.whenIdle();
    expect(replies()).toEqual([]);

    // Node c takes the account and sends the reply, once.
    const c = node(withState("c", 100));
    await c.start();
    await waitUntil(() => replies().length > 0, "c's reply", 20_000);
    await c.whenIdle();
    expect(replies()).toEqual(["You said: hello"]);
    expect((await db.query("SELECT holder FROM lease WHERE unit = $1", [UNIT])).rows[0]?.holder).toBe("c");
  },
);

/** The monotonic clock, with time that passed while the event loop was held: `hold(ms)` moves `now()` on and runs no timer. */
function holdableClock(): Clock & { hold(ms: number): void } {
  let held = 0;
  return {
    ...monotonicClock,
    now: () => monotonicClock.now() + held,
    hold(ms) {
      held += ms;
    },
  };
}

it.skipIf(noPostgres)(
  "a send whose lease's deadline has passed is refused before the lease's timer runs; the reply stays for the next owner, who sends it once",
  { timeout: 60_000 },
  async () => {
    const url = await server.createDatabase("leasedeadline");
    const fake = await createFakeTelegram({ token: TOKEN });
    onTestFinished(() => fake.close());
    const config = daemonConfigSchema.parse({
      service: { baseUrl: "http://127.0.0.1:9", apiKey: "svc_sk_unused" },
      dataDir: "/nonexistent",
      routes: [{ instance: "i1" }],
      channels: [{ type: "telegram", id: "tg", token: TOKEN, apiRoot: fake.url }],
    });
    const channel = config.channels[0];
    if (channel?.type !== "telegram") throw new Error("the config has no telegram channel");

    /** One owner of the account: its lease (on `clock`), its view of the state, and the delivery of its replies. */
    const owner = async (nodeId: string, clock: Clock) => {
      // A long lease: no renewal and no deadline timer runs during the test (none is started).
      const state = await openPostgresState({ kind: "postgres", url, nodeId, leaseTtlMs: 60_000, poolSize: 2 }, { units: [UNIT], clock });
      onTestFinished(() => state.abandon());
      const lease = await state.leases.acquire(UNIT);
      if (!lease) throw new Error(`${nodeId} could not acquire the account`);
      const store = createClusterStore({ state, accounts: [{ platform: "telegram", accountId: "tg" }], onWriteFailed() {} });
      await store.adopt(lease);
      const logger = pino({ level: "silent" });
      const adapter = createTelegramAdapter(channel, {
        logger,
        clock,
        state: store.kv("adapter:telegram:tg"),
        dataDir: "/nonexistent",
        maxAttachmentBytes: 1024,
      });
      const delivery = createDelivery({
        config,
        store,
        clock,
        random: seededRandom(1),
        logger,
        metrics: noMetrics,
        client: createServiceClient({ baseUrl: config.service.baseUrl, apiKey: config.service.apiKey }),
        adapterFor: () => adapter,
      });
      delivery.resumeAccount("telegram", "tg", lease);
      return { lease, store, delivery };
    };

    const clock = holdableClock();
    const first = await owner("a", clock);
    const message = {
      platform: "telegram",
      accountId: "tg",
      chatId: String(alice.id),
      chatType: "direct" as const,
      userId: String(alice.id),
      messageId: "1",
      text: "hello",
      sentAt: 0,
    };
    const route = { ruleIndex: 0, instanceId: "i1", model: "m", scope: "chat", sessionBase: `telegram.tg:${alice.id}` };
    const entry = await first.store.add({ kind: "turn", key: dedupeKeyOf(message), message, route });
    await first.store.recordReply(entry.id, { chunks: ["the answer"], members: [entry.id], format: "plain" });

    // The event loop was held past the lease's deadline: its timer has not run, its signal has not fired.
    clock.hold(60_000);
    expect(first.lease.signal.aborted).toBe(false);
    expect(first.lease.valid()).toBe(false);
    await expect(first.delivery.deliver(entry.id)).rejects.toBeInstanceOf(StoppingError);
    expect(fake.calls("sendMessage")).toBe(0);
    expect(first.store.get(entry.id)?.sent).toBe(0);

    // The lease runs out on the database's clock too; the next owner finds the reply and sends it, once.
    const db = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    await db.query("UPDATE lease SET expires_at = clock_timestamp() - interval '1 second' WHERE unit = $1", [UNIT]);
    const next = await owner("b", monotonicClock);
    const [pending] = next.store.pending();
    expect(pending?.reply?.chunks).toEqual(["the answer"]);
    await next.delivery.deliver(pending?.id ?? "");
    expect(fake.sentMessages(alice.id).map((m) => m.text)).toEqual(["the answer"]);
    expect(next.store.pending()).toEqual([]);
  },
);
