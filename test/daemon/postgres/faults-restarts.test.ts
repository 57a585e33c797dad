/**
 * Restarts of the nodes of a bridge on several machines, with real processes and a
 * real PostgreSQL server: a rolling restart of every node, and a seeded loop of
 * kills and pauses (`CHAOS_SEED=<n>` repeats one). The other faults: faults.test.ts.
 */
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../shared/random.js";
import type { FakeUser } from "../../fakes/telegram-bot-api.js";
import { alice, bob, byName, clusterPerTest, conversation } from "./cluster-harness.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const startNodes = clusterPerTest();

describe.skipIf(noPostgres)("restarts of the nodes of a bridge on several machines", () => {
  it("a rolling restart of all three nodes loses nothing and answers nothing twice", { timeout: 120_000 }, async () => {
    // A SIGTERM frees the lease at once, so its length costs this test nothing; a short one (3 s:
    // deadline 2.4 s after a renewal sent every second) self-fenced on a starved machine, and a
    // lease lost with a reply in flight may send it again (the paused-node fault, the chaos test's).
    const c = await startNodes({ leaseTtlMs: 15_000 });
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
