/**
 * Three real daemon processes on one PostgreSQL database form one bridge for a
 * Telegram bot (the fake Bot API answers overlapping polls with 409, as
 * Telegram does). The account is owned by one node at a time; these tests
 * kill, stop and pause the owner and check that every accepted message is
 * answered once, by the next owner, within the lease time plus 5 s.
 */
import { describe, expect, it } from "vitest";
import { telegramMarkdownToHtml } from "../../../daemon/adapters/telegram/index.js";
import { SCHEMA_VERSION } from "../../../daemon/state/postgres/migrations.js";
import { streamText } from "../../../emulator/gateway/model.js";
import { runAgentBridge } from "../../helpers/cli.js";
import { waitUntil } from "../../helpers/wait.js";
import { alice, bob, byName, clusterPerTest, discordAlice } from "./cluster-harness.js";

const startNodes = clusterPerTest();

describe("several daemons on PostgreSQL", () => {
  it("kill -9 of the owner mid-turn: another node answers every accepted message once, within the lease time plus 5 s", { timeout: 90_000 }, async () => {
    const ttl = 2_000;
    const c = await startNodes({ leaseTtlMs: ttl });
    const nodes = ["a", "b", "c"].map((n) => c.node(n));
    const first = await c.owner();
    c.fake.privateText(alice, "hello");
    await c.replied(alice, "You said: hello");

    // A turn out at the service (held there), and a message queued behind it: then the owner dies.
    const held = c.service.hold(700);
    c.fake.privateText(alice, "!sleep 700");
    c.fake.privateText(alice, "after the sleep");
    c.fake.privateText(bob, "from bob");
    await held.started;
    await c.replied(bob, "You said: from bob"); // another session runs beside the held one
    await c.settled(2); // bob's reply recorded as delivered: only alice's two are left to the next owner
    const before = await c.lease();
    byName(nodes, first).child.kill();
    const killedAt = Date.now();
    await byName(nodes, first).child.exited; // dead before its call could come back
    held.release(); // the next owner asks again; its sleep ends at once

    const second = await c.owner({ not: first });
    await c.replied(alice, "You said: after the sleep");
    const answeredInMs = Date.now() - killedAt;
    expect(answeredInMs).toBeLessThan(ttl + 5_000);
    const after = await c.lease();
    expect(after.epoch).toBeGreaterThan(before.epoch);
    expect(second).not.toBe(first);

    // Every message answered exactly once, in order.
    expect(c.replies(alice)).toEqual(["You said: hello", "slept 700", "You said: after the sleep"]);
    expect(c.replies(bob)).toEqual(["You said: from bob"]);

    // Its /healthz and /metrics say what it owns; the dead node's successor counts a takeover.
    const ops = await byName(nodes, second).opsUrl();
    const health = (await (await fetch(`${ops}/healthz`)).json()) as {
      node: string;
      owns: { unit: string; epoch: number; ageMs: number; deadlineInMs: number }[];
    };
    expect(health.node).toBe(second);
    expect(health.owns).toEqual([{ unit: "telegram:tg", epoch: after.epoch, ageMs: expect.any(Number), deadlineInMs: expect.any(Number) }]);
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(metrics).toContain(`agent_bridge_lease_owned{unit="telegram:tg"} 1`);
    expect(metrics).toContain(`agent_bridge_lease_epoch{unit="telegram:tg"} ${after.epoch}`);
    expect(metrics).toContain(`agent_bridge_lease_acquisitions_total{unit="telegram:tg"} 1`);
    expect(Number(/agent_bridge_lease_age_seconds\{unit="telegram:tg"\} (\S+)/.exec(metrics)?.[1])).toBeGreaterThan(0);

    // The new owner goes on answering.
    c.fake.privateText(alice, "still there?");
    await c.replied(alice, "You said: still there?");
    expect(c.replies(alice)).toEqual(["You said: hello", "slept 700", "You said: after the sleep", "You said: still there?"]);
    for (const n of nodes) expect(n.child.out()).not.toContain(c.service.key);
  });

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

  it("a streamed reply cut by a kill -9 of its owner is finished in place by the next owner, shown once", { timeout: 90_000 }, async () => {
    const c = await startNodes({ leaseTtlMs: 2_000, streaming: "partial" });
    const nodes = ["a", "b"].map((n) => c.node(n));
    const first = await c.owner();
    c.fake.privateText(alice, "!stream 2 300");
    // The preview message is out and its id recorded; the answer is not recorded yet: mid-stream.
    await waitUntil(
      async () => (await c.query("SELECT 1 FROM entry WHERE preview IS NOT NULL AND reply IS NULL")).length === 1,
      "the preview recorded",
      20_000,
      20,
    );
    const preview = c.fake.shownMessages(alice.id)[0]!;
    byName(nodes, first).child.kill();
    await byName(nodes, first).child.exited;
    const answer = telegramMarkdownToHtml(streamText(300));
    await waitUntil(() => c.fake.shownMessages(alice.id)[0]?.text === answer, "the answer shown in full", 30_000, 20);
    expect(c.fake.shownMessages(alice.id).map((m) => m.message_id)).toEqual([preview.message_id]); // finished in place
    expect(c.fake.sentMessages(alice.id)).toHaveLength(1); // never sent anew
    expect(await c.owner()).not.toBe(first);
  });
});
