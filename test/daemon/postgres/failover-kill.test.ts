/**
 * Three real daemon processes on one PostgreSQL database form one bridge for a
 * Telegram bot; the owner of the account is killed with kill -9 mid-turn and
 * mid-stream, and the next owner answers every accepted message once, within
 * the lease time plus 5 s, and finishes a streamed reply in place. (Handovers,
 * two accounts and pairing: failover.test.ts; two files so they run side
 * by side.)
 */
import { describe, expect, it } from "vitest";
import { telegramMarkdownToHtml } from "../../../daemon/adapters/telegram/index.js";
import { streamText } from "../../../emulator/gateway/model.js";
import { waitUntil } from "../../helpers/wait.js";
import { alice, bob, byName, clusterPerTest } from "./cluster-harness.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const startNodes = clusterPerTest();

describe.skipIf(noPostgres)("several daemons on PostgreSQL: kill -9 of the owner", () => {
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
    // The node to kill is the lease's holder now, read from the database with its epoch: on a
    // starved machine the first owner may have lost the lease since (self-fenced), and killing a
    // node that no longer holds it would prove nothing.
    const before = await c.lease();
    const owner = before.holder ?? first;
    byName(nodes, owner).child.kill();
    const killedAt = Date.now();
    await byName(nodes, owner).child.exited; // dead before its call could come back
    held.release(); // the next owner asks again; its sleep ends at once

    const second = await c.owner({ not: owner });
    await c.replied(alice, "You said: after the sleep");
    const answeredInMs = Date.now() - killedAt;
    expect(answeredInMs).toBeLessThan(ttl + 5_000);
    const after = await c.lease();
    expect(after.epoch).toBeGreaterThan(before.epoch);
    expect(second).not.toBe(owner);

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
