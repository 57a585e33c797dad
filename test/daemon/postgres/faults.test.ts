/**
 * The faults of a bridge on several machines, with real processes and a real
 * PostgreSQL server: an owner paused past its lease (SIGSTOP) and woken again,
 * the database killed and restarted under load, a rolling restart of every
 * node, and a seeded loop of kills and pauses (`CHAOS_SEED=<n>` repeats one).
 */
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../shared/random.js";
import { waitUntil } from "../../helpers/wait.js";
import type { FakeUser } from "../../fakes/telegram-bot-api.js";
import { alice, bob, byName, clusterPerTest, type Cluster } from "./cluster-harness.js";

const startNodes = clusterPerTest();

/** Sends `text` and remembers that `user` must get `You said: text` once. */
function conversation(c: Cluster) {
  const expected = new Map<FakeUser, string[]>([
    [alice, []],
    [bob, []],
  ]);
  return {
    say(user: FakeUser, text: string) {
      c.fake.privateText(user, text);
      expected.get(user)!.push(`You said: ${text}`);
    },
    /** Every message so far answered, in order, each once (or, for `repeatable` ones, at most twice). */
    async allAnswered(timeoutMs = 30_000, options: { repeatable?: (line: string) => boolean } = {}) {
      for (const [user, lines] of expected) if (lines.length) await c.replied(user, lines.at(-1)!, timeoutMs);
      for (const [user, lines] of expected) {
        const got = c.replies(user);
        if (!options.repeatable) {
          expect(got).toEqual(lines);
          continue;
        }
        // Each once, in order, apart from an immediate repeat of a repeatable one.
        const deduped = got.filter((line, i) => !(options.repeatable!(line) && got[i - 1] === line));
        expect(deduped).toEqual(lines);
      }
    },
    expected,
  };
}

describe("faults of a bridge on several machines", () => {
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

  it("a rolling restart of all three nodes loses nothing and answers nothing twice", { timeout: 120_000 }, async () => {
    const c = await startNodes({ leaseTtlMs: 3_000 });
    let nodes = ["a", "b", "c"].map((n) => c.node(n));
    await c.owner();
    for (const node of nodes) await node.child.waitFor((o) => o.includes("daemon started"), `${node.name} to start`);
    const talk = conversation(c);
    let n = 0;
    for (const name of ["a", "b", "c"]) {
      talk.say(alice, `message ${++n}`);
      talk.say(bob, `message ${++n}`);
      const node = byName(nodes, name);
      node.child.proc.kill("SIGTERM");
      talk.say(alice, `message ${++n}`);
      expect(await node.child.exited).toBe(0);
      const again = node.restart();
      nodes = nodes.map((x) => (x.name === name ? again : x));
      await again.child.waitFor((o) => o.includes("daemon started"), `${name} to start again`);
      talk.say(bob, `message ${++n}`);
    }
    await talk.allAnswered(60_000);
  });

  it("a seeded loop of kills, pauses and stops: every message answered, in order per chat, at most one duplicate per fault", { timeout: 180_000 }, async () => {
    const seed = process.env.CHAOS_SEED ?? "7";
    const random = seededRandom(`chaos:${seed}`);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random.float() * list.length)]!;
    const c = await startNodes({ leaseTtlMs: 1_500, pollMs: 150 });
    let nodes = ["a", "b", "c"].map((n) => c.node(n));
    await c.owner();
    for (const node of nodes) await node.child.waitFor((o) => o.includes("daemon started"), `${node.name} to start`);
    const plan: string[] = [];
    const expected = new Map<FakeUser, string[]>([
      [alice, []],
      [bob, []],
    ]);
    let faults = 0;
    let n = 0;
    for (let round = 0; round < 10; round++) {
      for (const user of [alice, bob]) {
        const text = `m${++n}`;
        c.fake.privateText(user, text);
        expected.get(user)!.push(`You said: ${text}`);
      }
      const owner = await c.owner();
      const target = byName(nodes, pick([owner, owner, ...nodes.map((x) => x.name)]));
      const action = pick(["kill", "pause", "stop"] as const);
      plan.push(`${action} ${target.name}${target.name === owner ? " (owner)" : ""}`);
      faults++;
      if (action === "pause") {
        process.kill(target.pid(), "SIGSTOP");
        if (target.name === owner) await c.owner({ not: owner });
        process.kill(target.pid(), "SIGCONT");
        continue;
      }
      if (action === "kill") target.child.kill();
      else target.child.proc.kill("SIGTERM");
      await target.child.exited;
      const again = target.restart();
      nodes = nodes.map((x) => (x.name === target.name ? again : x));
      await again.child.waitFor((o) => o.includes("daemon started"), `${target.name} to start again`);
    }
    const context = `seed ${seed}: ${plan.join(", ")}`;
    for (const [user, lines] of expected) {
      await c.replied(user, lines.at(-1)!, 60_000);
      const got = c.replies(user);
      // Each message answered; the first answers in the order asked; duplicates only within the fault window.
      for (const line of lines) expect(got, context).toContain(line);
      const firsts = lines.map((l) => got.indexOf(l));
      expect(firsts, context).toEqual([...firsts].sort((a, b) => a - b));
      expect(got.length - lines.length, context).toBeLessThanOrEqual(faults);
      expect(
        got.every((l) => lines.includes(l)),
        context,
      ).toBe(true);
    }
  });
});
