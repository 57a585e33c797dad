/**
 * Several machines: an account's replies go out only under its lease. A node
 * that loses the lease while it is still taking the account (its adapter
 * starting, the stored replies being sent again) must send nothing more, even
 * though its hand-over steps wait behind the take; the next owner sends the
 * reply, once. Daemons in this process on a real PostgreSQL server, behind the
 * fake Telegram Bot API.
 */
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it, onTestFinished } from "vitest";
import { createTelegramAdapter } from "../../../daemon/adapters/telegram/index.js";
import { stateSchema, type DaemonConfig } from "../../../daemon/config/schema.js";
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
