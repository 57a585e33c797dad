import pg from "pg";
import { afterEach, expect, it, onTestFinished } from "vitest";
import { npubToHex } from "../../../daemon/adapters/nostr/config.js";
import { createFakeRelay, createPerson } from "../../fakes/nostr.js";
import { startTestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir } from "../daemon-harness.js";
import { clusterState, platformNodes } from "./cluster-harness.js";
import type { DaemonChild } from "../daemon-process.js";

const noPostgres = lacks("postgres", import.meta.url);
const UNIT = "nostr:ns";

afterEach(() => {
  delete process.env.BRIDGE_TEST_KEY;
});

const npubOf = (child: DaemonChild): string | undefined => /"npub":"(npub1[02-9ac-hj-np-z]{58})"/.exec(child.out())?.[1];

it.skipIf(noPostgres)(
  "one answer per message from the owner alone; after a kill -9 the next owner, the same bot, answers what was sent meanwhile once",
  { timeout: 120_000 },
  async () => {
    const pgServer = await startTestPostgres();
    onTestFinished(() => pgServer.close());
    const dbUrl = await pgServer.createDatabase("nostr");
    const service = await startService();
    onTestFinished(() => service.close());
    const relay = await createFakeRelay();
    onTestFinished(() => relay.close());
    const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
    onTestFinished(() => db.end());
    const dir = tempDir();
    onTestFinished(dir.remove);
    const node = platformNodes({
      dir: dir.path,
      service,
      dbUrl,
      channels: [{ type: "nostr", id: "ns", relays: [relay.url], access: { mode: "open" } }],
      extra: { attachments: { enabled: false } },
    });
    const { owner, settled } = clusterState(db, UNIT);

    const a = node("a");
    await a.waitFor((o) => o.includes("daemon started"), "a started");
    const first = await owner();
    const b = node("b");
    await b.waitFor((o) => o.includes("daemon started"), "b started");
    const firstChild = first === "a" ? a : b;
    const secondChild = first === "a" ? b : a;
    await waitUntil(() => npubOf(firstChild), "the bot's npub in the owner's log");
    const botKey = npubToHex(npubOf(firstChild) ?? "") ?? "";
    expect(botKey).toMatch(/^[0-9a-f]{64}$/);
    const alice = createPerson(botKey);
    onTestFinished(() => alice.close());
    const answers = () => alice.read(relay.events()).map((m) => m.text);
    // Only the owner reads the relay: one subscription, one answer.
    await waitUntil(() => relay.connections() === 1 && relay.requests().length === 1, "the owner's subscription");

    await alice.dm17("hello", [relay.url]);
    await waitUntil(() => answers().length === 1, "the first answer", 30_000);
    await settled();
    // Still one subscription (Alice's client only publishes): the other node never read the relay.
    expect(relay.requests()).toHaveLength(1);

    firstChild.kill();
    await firstChild.exited;
    // Published while nobody owns the account: the relay keeps it.
    await alice.dm17("during the failover", [relay.url]);
    expect(await owner(first)).not.toBe(first);
    await waitUntil(() => npubOf(secondChild), "the next owner's npub");
    expect(npubOf(secondChild)).toBe(npubOf(firstChild));
    await waitUntil(() => answers().length === 2, "the answer to the message sent meanwhile", 30_000);
    // The next owner looked back (gift wraps are dated up to two days early), so it got "hello" again: known, not answered.
    const since = relay.requests().at(-1)?.[0]?.since ?? Number.POSITIVE_INFINITY;
    expect(since).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) - 2 * 24 * 3600);
    await alice.dm17("still there?", [relay.url]);
    await waitUntil(() => answers().length === 3, "the next answer", 30_000);
    await settled();
    expect(answers()).toEqual(["You said: hello", "You said: during the failover", "You said: still there?"]);
  },
);
