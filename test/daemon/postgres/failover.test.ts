/**
 * Three real daemon processes on one PostgreSQL database form one bridge for a
 * Telegram bot (the fake Bot API answers overlapping polls with 409, as
 * Telegram does). The account is owned by one node at a time; these tests
 * stop the owner (SIGTERM) and kill it with two accounts spread over the nodes
 * and with a pairing approved, and check that the next owner answers every
 * accepted message once. (kill -9 mid-turn and mid-stream: failover-kill.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { SCHEMA_VERSION } from "../../../daemon/state/postgres/migrations.js";
import { runAgentBridge } from "../../helpers/cli.js";
import { waitUntil } from "../../helpers/wait.js";
import { alice, byName, clusterPerTest, discordAlice } from "./cluster-harness.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const startNodes = clusterPerTest();

describe.skipIf(noPostgres)("several daemons on PostgreSQL", () => {
  it("SIGTERM hands the account over well before the lease would expire, with nothing lost or twice", { timeout: 60_000 }, async () => {
    const ttl = 20_000;
    const c = await startNodes({ leaseTtlMs: ttl });
    const nodes = ["a", "b"].map((n) => c.node(n));
    const first = await c.owner();
    c.fake.privateText(alice, "one");
    await c.replied(alice, "You said: one");
    const stoppedAt = Date.now();
    byName(nodes, first).child.proc.kill("SIGTERM");
    const second = await c.owner({ not: first });
    expect(second).not.toBe(first);
    expect(await byName(nodes, first).child.exited).toBe(0);
    c.fake.privateText(alice, "two");
    await c.replied(alice, "You said: two");
    expect(Date.now() - stoppedAt).toBeLessThan(ttl / 2);
    expect(c.replies(alice)).toEqual(["You said: one", "You said: two"]);

    // `agent-bridge check` reads who owns what from the database (the URL's password never shown).
    const check = runAgentBridge(["check", "--config", byName(nodes, first).configFile]);
    await check.exited;
    expect(check.stdout()).toMatch(new RegExp(`ok +database postgres://postgres@127\\.0\\.0\\.1:\\d+/\\w+: reachable, schema version ${SCHEMA_VERSION}\\b`));
    expect(check.stdout()).toMatch(new RegExp(`ok +account telegram:tg: owned by node ${second} \\(epoch 2, lease valid for \\d+ s more\\)`));
  });

  it("two accounts spread over the nodes; a Discord DM sent while no node was connected is caught up by the next owner, once", {
    timeout: 90_000,
  }, async () => {
    const c = await startNodes({ leaseTtlMs: 2_000, discord: true });
    const nodes = ["a", "b", "c"].map((n) => c.node(n));
    const d = c.discord!;
    // Whoever started first took both; a node that joins gets its fair share (one account each).
    await waitUntil(
      async () => {
        const [tg, dc] = [await c.lease(), await c.lease("discord:dc")];
        return tg.live && dc.live && tg.holder !== dc.holder;
      },
      "the two accounts on two nodes",
      30_000,
      50,
    );
    const owner = await c.owner({ unit: "discord:dc" });
    const dm = d.dmChannelFor(discordAlice);
    const answers = () => d.sentMessages(dm).map((m) => m.content);
    await waitUntil(() => d.liveSessions() === 1, "the owner's gateway session");
    // The rebalance is over: the owner's own gateway session is the one live (a message sent to a
    // session being closed by a handover is only caught up in channels the account has served).
    await byName(nodes, owner).child.waitFor((o) => /"platform":"discord","accountId":"dc","state":"connected"/.test(o), "the owner's Discord session");
    await waitUntil(() => d.liveSessions() === 1, "one live gateway session");
    d.dispatchDirectMessage(discordAlice, "hi");
    await waitUntil(() => answers().includes("You said: hi"), "the first answer", 20_000);
    await c.settled();
    // The channel is in the account's catch-up state (saved every 2 s) before the owner dies.
    await waitUntil(async () => JSON.stringify((await c.adapterValue("discord:dc", "catchUp")) ?? {}).includes(dm), "the DM in the catch-up state", 10_000, 50);

    byName(nodes, owner).child.kill();
    await byName(nodes, owner).child.exited;
    d.postWhileAway({ channelId: dm, author: discordAlice, content: "while nobody is connected" });
    await c.owner({ unit: "discord:dc", not: owner });
    await waitUntil(() => answers().includes("You said: while nobody is connected"), "the caught-up answer", 30_000);
    await waitUntil(() => d.liveSessions() === 1, "the new owner's gateway session");
    d.dispatchDirectMessage(discordAlice, "and now");
    await waitUntil(() => answers().includes("You said: and now"), "a live answer from the new owner");
    expect(answers()).toEqual(["You said: hi", "You said: while nobody is connected", "You said: and now"]);
  });

  it("a DM pairing approved on the owning node moves with the account: the next owner knows the person", { timeout: 90_000 }, async () => {
    const c = await startNodes({ leaseTtlMs: 2_000, telegramAccess: { mode: "pairing", owners: [String(alice.id)] } });
    const nodes = ["a", "b"].map((n) => c.node(n));
    const first = await c.owner();
    const carol = { id: 4103, username: "carol" };
    c.fake.privateText(carol, "hi");
    await waitUntil(() => c.replies(carol).length === 1, "the pairing code");
    const code = /pairing code is (\S+) \(valid/.exec(c.replies(carol)[0]!)?.[1];
    expect(code).toBeDefined();

    // Asked of the node that does not own the channel: refused, naming where to run it.
    const other = nodes.find((n) => n.name !== first)!;
    const refused = runAgentBridge(["pairing", "approve", "tg", code!, "--config", other.configFile]);
    expect(await refused.exited).not.toBe(0);
    expect(refused.stderr()).toContain("does not own channel tg");
    const approved = runAgentBridge(["pairing", "approve", "tg", code!, "--config", byName(nodes, first).configFile]);
    expect(await approved.exited).toBe(0);
    await waitUntil(() => c.replies(carol).length === 2, "the approval notice");
    c.fake.privateText(carol, "let in");
    await c.replied(carol, "You said: let in");
    await c.settled(); // recorded as delivered before the kill (a kill in between resends it: the one-chunk window)

    byName(nodes, first).child.kill();
    await byName(nodes, first).child.exited;
    await c.owner({ not: first });
    c.fake.privateText(carol, "after the failover");
    await c.replied(carol, "You said: after the failover");
    expect(c.replies(carol).slice(2)).toEqual(["You said: let in", "You said: after the failover"]);
  });
});
