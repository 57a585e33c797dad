/**
 * The faults of a bridge on several machines, with real processes and a real
 * PostgreSQL server: an owner paused past its lease (SIGSTOP) and woken again,
 * and the database killed and restarted under load (restarts of the nodes:
 * faults-restarts.test.ts; two files so they run side by side).
 */
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../helpers/wait.js";
import { alice, bob, byName, clusterPerTest, conversation } from "./cluster-harness.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const startNodes = clusterPerTest();

describe.skipIf(noPostgres)("faults of a bridge on several machines", () => {
  it("an owner paused past its lease sends and writes nothing when it wakes, and rejoins as a follower", { timeout: 90_000 }, async () => {
    const c = await startNodes({ leaseTtlMs: 2_000 });
    const nodes = ["a", "b", "c"].map((n) => c.node(n));
    const first = await c.owner();
    const paused = byName(nodes, first);
    c.fake.privateText(alice, "hello");
    await c.replied(alice, "You said: hello");

    const held = c.service.hold(600);
    c.fake.privateText(alice, "!sleep 600");
    await held.started; // the owner's call is out at the service
    process.kill(paused.pid(), "SIGSTOP");
    try {
      await c.owner({ not: first });
      held.release(); // both calls come back: the paused owner's waits in its socket
      await c.replied(alice, "slept 600");
      c.fake.privateText(bob, "while it sleeps");
      await c.replied(bob, "You said: while it sleeps");
    } finally {
      process.kill(paused.pid(), "SIGCONT");
    }
    await paused.child.waitFor((o) => o.includes('"msg":"lost the account"'), "the woken node to give the account up");
    c.fake.privateText(alice, "after the wake");
    await c.replied(alice, "You said: after the wake");

    expect(c.replies(alice)).toEqual(["You said: hello", "slept 600", "You said: after the wake"]);
    expect(c.replies(bob)).toEqual(["You said: while it sleeps"]);
    expect(paused.child.proc.exitCode).toBe(null); // still running, as a follower
    expect((await c.lease()).holder).not.toBe(first);
    const seen = await c.nodeSeenAgoMs(first);
    expect(seen).toBeLessThan(2_000); // it heartbeats again: it counts for the fair share
  });

  it("the database killed and restarted under load: nothing accepted is lost, order is kept, only a reply in flight at the kill may be sent twice", {
    timeout: 90_000,
  }, async () => {
    const c = await startNodes({ leaseTtlMs: 2_000 });
    const nodes = ["a", "b"].map((n) => c.node(n));
    await c.owner();
    const ops = await nodes[0]!.opsUrl();
    const talk = conversation(c);
    for (let i = 1; i <= 4; i++) talk.say(i % 2 ? alice : bob, `before ${i}`);
    await c.pg.kill();
    for (let i = 1; i <= 4; i++) talk.say(i % 2 ? alice : bob, `during ${i}`);
    // A node that cannot reach the database says so: /healthz answers 503.
    await waitUntil(async () => (await fetch(`${ops}/healthz`)).status === 503, "a's /healthz to report the database unreachable", 20_000, 50);
    await c.pg.start();
    await waitUntil(async () => (await fetch(`${ops}/healthz`)).status === 200, "a's /healthz healthy again", 20_000, 50);
    for (let i = 1; i <= 4; i++) talk.say(i % 2 ? alice : bob, `after ${i}`);
    // Nothing lost, in order; a reply in flight when the database died (sent, its record refused)
    // may be sent once more by whoever takes the account: the one-chunk window. Nothing else twice.
    await talk.allAnswered(60_000, { repeatable: (line) => line.includes("before") });
  });
});
