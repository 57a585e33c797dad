/**
 * WhatsApp on several machines: the linked device's keys (Baileys' creds and
 * signal keys) live in the database under the account, so the node that takes
 * the account over connects as the same device, with no new QR code. Two
 * daemons in this process on a real PostgreSQL server, behind one fake device
 * (a newer open socket replaces the older with 440, as WhatsApp does).
 */
import { Writable } from "node:stream";
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it, onTestFinished } from "vitest";
import { createWhatsAppAdapter } from "../../../daemon/adapters/whatsapp/index.js";
import { formatResult, runChecks } from "../../../daemon/check/index.js";
import { stateSchema } from "../../../daemon/config/schema.js";
import { createDaemon, type Daemon } from "../../../daemon/daemon.js";
import { seededRandom } from "../../../shared/random.js";
import { createFakeBaileys, directByPhone, pnJid } from "../../fakes/baileys-socket.js";
import { startServiceFixture } from "../../helpers/bridge.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { waitUntil } from "../../helpers/wait.js";
import { testHandle } from "../../../daemon/test-handle.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const ANA = "4915111111111";
let server: TestPostgres;

beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

it.skipIf(noPostgres)(
  "the node that takes a WhatsApp account over connects as the same linked device, from the keys in the database",
  { timeout: 60_000 },
  async () => {
    const url = await server.createDatabase("wa");
    const service = await startServiceFixture("wa-cluster-");
    const base = service.configFor({
      type: "whatsapp",
      id: "wa",
      ackReaction: { scope: "off" },
      groupContext: { enabled: false },
      access: { users: [`+${ANA}`] },
    });
    const fake = createFakeBaileys();
    const quiet = new Writable({ write: (_c, _e, cb) => cb() });
    const node = (name: string, seed: number): Daemon => {
      const daemon = createDaemon({
        config: { ...base, state: stateSchema.parse({ kind: "postgres", url, nodeId: name, leaseTtlMs: 3_000, pollMs: 100 }) },
        logger: pino({ level: "silent" }),
        random: seededRandom(seed),
        createAdapter: (channel, deps) =>
          channel.type === "whatsapp"
            ? Promise.resolve(createWhatsAppAdapter(channel, deps, { socketFactory: fake.factory, qrOutput: quiet, random: seededRandom(seed) }))
            : undefined,
      });
      onTestFinished(() => daemon.stop({ graceMs: 0 }));
      return daemon;
    };

    // The first node links the device: Baileys fills in the creds and saves them (fenced, in the database).
    const a = node("a", 1);
    await a.start();
    await waitUntil(() => fake.sockets.length === 1, "a's socket");
    const first = fake.latest();
    first.open();
    const me = { id: pnJid(fake.account.phone, 7), name: "Agent" };
    first.updateCreds({ me, registered: true });
    const db = new pg.Pool({ connectionString: url, max: 1 });
    onTestFinished(() => db.end());
    await waitUntil(async () => {
      const { rows } = await db.query("SELECT v FROM wa_auth WHERE unit = 'whatsapp:wa' AND type = 'creds' AND id = 'creds'");
      return (rows[0] as { v: { me?: { id?: string } } } | undefined)?.v.me?.id === me.id;
    }, "the creds in the database");
    first.receive([directByPhone(ANA, "hello")]);
    await waitUntil(() => first.sent.some((s) => s.content.text === "You said: hello"), "a's answer");
    await a.whenIdle();

    // The second node waits as a follower; the first dies (no release): it takes over after the lease.
    const b = node("b", 2);
    await b.start();
    expect(fake.sockets).toHaveLength(1);
    await testHandle(a).crash();
    await waitUntil(() => fake.sockets.length === 2, "b's socket after the lease expired", 20_000);
    const second = fake.latest();
    // The same device: the keys b's socket was given are the ones a's saved, not fresh ones (no QR code).
    expect(second.config.auth.creds.me?.id).toBe(me.id);
    expect(second.config.auth.creds.registered).toBe(true);
    expect(Buffer.from(second.config.auth.creds.noiseKey.private)).toEqual(Buffer.from(first.config.auth.creds.noiseKey.private));
    second.open();
    second.receive([directByPhone(ANA, "after the takeover")]);
    await waitUntil(() => second.sent.some((s) => s.content.text === "You said: after the takeover"), "b's answer");
    expect(first.sent.filter((s) => s.content.text?.startsWith("You said")).map((s) => s.content.text)).toEqual(["You said: hello"]);
    expect(second.sent.filter((s) => s.content.text?.startsWith("You said")).map((s) => s.content.text)).toEqual(["You said: after the takeover"]);

    // `agent-bridge check` reads the link from the database (there is no auth folder on this machine).
    const lines = (await runChecks({ ...base, state: stateSchema.parse({ kind: "postgres", url }) })).map(formatResult);
    expect(lines).toContain("ok    channel wa (whatsapp): linked to a phone (its keys are in the database)");
    expect(lines.some((l) => /^ok +account whatsapp:wa: owned by node b /.test(l))).toBe(true);
  },
);
