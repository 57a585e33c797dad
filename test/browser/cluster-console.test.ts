/**
 * The console's nodes view on a real PostgreSQL server, in real Chromium: two
 * daemons (in this process) form one bridge for a Telegram account on the Bot
 * API fake; the owner's console shows both nodes, the account's owner and
 * fencing number, and hands the account over to the other node, which then
 * answers. Ownership is also read from the database's lease row, not only
 * from the page.
 */
import type { Page } from "playwright-core";
import pg from "pg";
import { pino } from "pino";
import { beforeAll, expect, it } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { daemonConfigSchema } from "../../daemon/config/schema.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { launchBrowser, textOf, UNTIL, type TestBrowser } from "../helpers/browser.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.js";
import { tempDir } from "../helpers/emulator.js";
import { waitUntil } from "../helpers/wait.js";
import { lacks } from "../helpers/system-programs.js";

// Both are looked up (and recorded) even when the first is missing.
const missing = [lacks("chromium", import.meta.url), lacks("postgres", import.meta.url)].some(Boolean);

const OPS_TOKEN = "ops-cluster-token-41c9e0b7aa";
const BOT_TOKEN = "777001:ClusterConsoleBotTokenBBBBBBBBBBBBB";
const UNIT = "telegram:tg";
const alice = { id: 4201, username: "alice" };

let postgres: TestPostgres;
let url: string;
let db: pg.Pool;
let service: ServiceFixture;
let fake: FakeTelegram;
const nodes = new Map<string, Daemon>();
const logLines: string[] = [];
let browser: TestBrowser;
let page: Page;

// File-wide: each beforeAll returns its release, which the runner calls after the test (last made, first released).
beforeAll(async () => {
  postgres = await startTestPostgres();
  return () => postgres.close();
});
beforeAll(async () => {
  url = await postgres.createDatabase("console");
  db = new pg.Pool({ connectionString: url, max: 1 });
  return () => db.end();
});
beforeAll(async () => {
  const fixture = await openServiceFixture("cluster-console-");
  service = fixture;
  return fixture.close;
});
beforeAll(async () => {
  fake = await createFakeTelegram({ token: BOT_TOKEN });
  return () => fake.close();
});
for (const name of ["node-a", "node-b"]) {
  beforeAll(() => {
    const dir = tempDir(`cluster-console-${name}-`);
    const base = service.configFor({ type: "terminal" });
    const config = daemonConfigSchema.parse({
      service: base.service,
      dataDir: dir.path,
      state: { kind: "postgres", url, nodeId: name, leaseTtlMs: 3_000, pollMs: 200, handoverGraceMs: 200 },
      logLevel: "silent",
      ops: { port: 0, token: OPS_TOKEN },
      queue: { debounceMs: 0 },
      routes: [{ instance: service.instanceId }],
      channels: [{ type: "telegram", id: "tg", token: BOT_TOKEN, apiRoot: fake.url, streaming: "off", access: { users: [String(alice.id)] } }],
    });
    const daemon = createDaemon({ config, logger: pino({ level: "info" }, { write: (l: string) => void logLines.push(l) }) });
    nodes.set(name, daemon);
    return async () => {
      await daemon.stop({ graceMs: 0 });
      dir.remove();
    };
  });
}
// Started one after the other once both exist: a start that fails tears itself down, and both are still stopped.
beforeAll(async () => {
  for (const daemon of nodes.values()) await daemon.start();
});
beforeAll(async () => {
  browser = await launchBrowser();
  return () => browser.close();
});
beforeAll(async () => {
  page = await browser.context.newPage();
});

/** The account's lease row as the database holds it. */
async function lease(): Promise<{ holder: string | null; epoch: number; live: boolean }> {
  const { rows } = await db.query("SELECT holder, epoch::int AS epoch, expires_at > clock_timestamp() AS live FROM lease WHERE unit = $1", [UNIT]);
  return rows[0] as { holder: string | null; epoch: number; live: boolean };
}

async function ask(text: string): Promise<string> {
  const before = fake.sentMessages(alice.id).length;
  fake.privateText(alice, text);
  await fake.waitFor(() => fake.sentMessages(alice.id).length > before, 20_000);
  return fake.sentMessages(alice.id).at(-1)!.text;
}

it.skipIf(missing)(
  "shows the nodes and who owns the account with its fencing number, and hands it over to the other node from the owner's console",
  async () => {
    const owner = await waitUntil(async () => {
      const l = await lease();
      return l.live && l.holder;
    }, "a node to own the account");
    const other = owner === "node-a" ? "node-b" : "node-a";
    const { epoch } = await lease();
    expect(await ask("before")).toBe("You said: before");

    await page.goto(`${nodes.get(owner)!.opsUrl}/ui/nodes?token=${OPS_TOKEN}`);
    await expect.poll(() => textOf(page.getByTestId("live-status")), UNTIL).toBe("live");
    await expect.poll(() => textOf(page.getByTestId("this-node")), UNTIL).toBe(owner);
    await expect.poll(() => page.getByTestId("nodes").locator("tbody tr").count(), UNTIL).toBe(2);
    const row = page.locator(`tr[data-unit="${UNIT}"]`);
    await expect.poll(() => textOf(row.getByTestId("owner")), UNTIL).toBe(owner);
    await expect.poll(() => textOf(row.getByTestId("epoch")), UNTIL).toBe(String(epoch));

    await page.getByLabel("Your name (for the log)").fill("bob");
    await row.getByRole("button", { name: "Hand over" }).click();
    // It asks first and says what it will do; the row keeps the question across the view's refreshes (its rows are keyed).
    const question = row.getByRole("group", { name: "Confirm" });
    await expect.poll(() => textOf(question), UNTIL).toContain(`Hand ${UNIT} over? This node lets go of it and another node takes it`);
    expect(logLines.some((l) => l.includes("hand-over asked from the console"))).toBe(false);
    await question.getByRole("button", { name: "Yes" }).click();
    await expect.poll(() => textOf(page.getByTestId("hand-over-result")), UNTIL).toContain(`Handed ${UNIT} over`);
    // The other node took it, with the next fencing number: in the database and on the page.
    await waitUntil(async () => {
      const l = await lease();
      return l.live && l.holder === other;
    }, "the other node to own the account");
    expect((await lease()).epoch).toBe(epoch + 1);
    await expect.poll(() => textOf(row.getByTestId("owner")), UNTIL).toBe(other);
    await expect.poll(() => textOf(row.getByTestId("epoch")), UNTIL).toBe(String(epoch + 1));
    expect(await row.getByRole("button", { name: "Hand over" }).count()).toBe(0);
    expect(logLines.some((l) => l.includes("hand-over asked from the console") && l.includes('"by":"console:bob@127.0.0.1"'))).toBe(true);

    // The new owner answers.
    expect(await ask("after")).toBe("You said: after");
    expect(nodes.get(other)!.health().owns).toEqual([expect.objectContaining({ unit: UNIT, epoch: epoch + 1 })]);
  },
);
