/**
 * Leases with fencing against a real PostgreSQL server: a takeover bumps the
 * epoch and the old owner's writes are refused; a paused owner fences itself
 * before anyone can take over; units are spread over the live nodes.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type HeldLease, LeaseLostError, openPostgresState, type PostgresState } from "../../../daemon/state/postgres/index.js";
import { monotonicClock } from "../../../daemon/state/postgres/monotonic-clock.js";
import { dedupeKeyOf } from "../../../daemon/vocabulary/keys.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { waitUntil } from "../../helpers/wait.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

interface NodeOptions {
  url: string;
  nodeId: string;
  units: string[];
  leaseTtlMs?: number;
  pollMs?: number;
  onAcquired?: (lease: HeldLease) => void;
  beforeRelease?: (lease: HeldLease) => Promise<void>;
}

async function node(o: NodeOptions): Promise<PostgresState> {
  const state = await openPostgresState(
    { kind: "postgres", url: o.url, nodeId: o.nodeId, leaseTtlMs: o.leaseTtlMs ?? 1_500, pollMs: o.pollMs ?? 100, poolSize: 3 },
    { units: o.units, ...(o.onAcquired ? { onAcquired: o.onAcquired } : {}), ...(o.beforeRelease ? { beforeRelease: o.beforeRelease } : {}) },
  );
  onTestFinished(() => state.abandon());
  return state;
}

const message = (id: string) => ({
  platform: "telegram",
  accountId: "bot",
  chatId: "c1",
  chatType: "direct" as const,
  userId: "u1",
  messageId: id,
  text: `hello ${id}`,
  sentAt: 0,
});
const route = { ruleIndex: 0, instanceId: "i1", model: "m", scope: "chat", sessionBase: "telegram.bot:c1" };

describe.skipIf(noPostgres)("leases", () => {
  it("a takeover bumps the epoch, and the old owner's writes are refused with LeaseLostError", async () => {
    const url = await server.createDatabase("takeover");
    // 3 s, not 1.5: this file shares the cores with other files, and a stall past the deadline would fence a before the test means to.
    const a = await node({ url, nodeId: "a", units: ["telegram:bot"], leaseTtlMs: 3_000 });
    const b = await node({ url, nodeId: "b", units: ["telegram:bot"], leaseTtlMs: 3_000 });
    await a.leases.start();
    const leaseA = a.leases.held()[0];
    expect(leaseA?.epoch).toBe(1);
    if (!leaseA) throw new Error("a holds nothing");
    const stateA = await a.openUnit(leaseA);
    await stateA.accept({ kind: "turn", key: dedupeKeyOf(message("1")), message: message("1"), route });

    // A stops renewing (a pause); B takes over once the lease expired on the database's clock.
    await a.leases.halt();
    const leaseB = await waitUntil(() => b.leases.acquire("telegram:bot"), "b to take over", 15_000, 50);
    expect(leaseB.epoch).toBe(2);

    // A's state still believes it is the owner, but the database says otherwise.
    const write = stateA.accept({ kind: "turn", key: dedupeKeyOf(message("2")), message: message("2"), route });
    await expect(write).rejects.toBeInstanceOf(LeaseLostError);
    await expect(stateA.recordSent(stateA.pending()[0]?.id ?? "", 1)).rejects.toBeInstanceOf(LeaseLostError);

    // B sees what A committed, and nothing A tried after losing the lease.
    const stateB = await b.openUnit(leaseB);
    expect(stateB.pending().map((e) => e.key)).toEqual([dedupeKeyOf(message("1"))]);
    expect(stateB.pending()[0]?.sent).toBe(0);
  });

  it("the inbox keeps an event once per key from any node, wakes the watchers, and only the current owner removes it", async () => {
    const url = await server.createDatabase("inbox");
    // 3 s, not 1.5: this file shares the cores with other files, and a stall past the deadline would fence a before the test means to.
    const a = await node({ url, nodeId: "a", units: ["slack:sl"], leaseTtlMs: 3_000 });
    const b = await node({ url, nodeId: "b", units: ["slack:sl"], leaseTtlMs: 3_000 });
    await a.leases.start();
    const leaseA = a.leases.held()[0];
    if (!leaseA) throw new Error("a holds nothing");
    const stateA = await a.openUnit(leaseA);
    let woken = 0;
    const unwatch = a.inbox.watch("slack:sl", () => woken++);
    // Kept by the node that does not own the account; a repeat of the key (Slack's retry) is the same row.
    await waitUntil(
      async () => {
        await b.inbox.put("slack:sl", "event:Ev1", { n: 1 });
        return woken > 0;
      },
      "a woken by b's put",
      10_000,
      50,
    );
    await b.inbox.put("slack:sl", "event:Ev1", { n: 2 });
    await b.inbox.put("slack:sl", "event:Ev2", { n: 3 });
    unwatch();
    expect(await a.inbox.pending("slack:sl")).toEqual([
      { key: "event:Ev1", body: { n: 1 } },
      { key: "event:Ev2", body: { n: 3 } },
    ]);
    await stateA.removeInbox(["event:Ev1"]);

    // After a takeover the old owner removes nothing: the row waits for the new owner.
    await a.leases.halt();
    const leaseB = await waitUntil(() => b.leases.acquire("slack:sl"), "b to take over", 15_000, 50);
    await expect(stateA.removeInbox(["event:Ev2"])).rejects.toBeInstanceOf(LeaseLostError);
    expect((await b.inbox.pending("slack:sl")).map((r) => r.key)).toEqual(["event:Ev2"]);
    const stateB = await b.openUnit(leaseB);
    await stateB.removeInbox(["event:Ev2"]);
    expect(await b.inbox.pending("slack:sl")).toEqual([]);
  });

  it("an owner that cannot renew fences itself before another node can acquire its lease", async () => {
    const url = await server.createDatabase("selffence");
    const ttl = 1_500;
    const a = await node({ url, nodeId: "a", units: ["whatsapp:phone"], leaseTtlMs: ttl });
    const leaseA = await a.leases.acquire("whatsapp:phone");
    if (!leaseA) throw new Error("a could not acquire a free lease");
    // A never renews (it was not started: a paused or cut-off node). B polls for the lease.
    const fencedAt = new Promise<number>((resolve) => leaseA.signal.addEventListener("abort", () => resolve(monotonicClock.now()), { once: true }));
    let acquiredAt = 0;
    let aValidAtTakeover: boolean | undefined;
    const b = await node({
      url,
      nodeId: "b",
      units: ["whatsapp:phone"],
      leaseTtlMs: ttl,
      pollMs: 20,
      onAcquired: () => {
        acquiredAt = monotonicClock.now();
        aValidAtTakeover = leaseA.valid();
      },
    });
    await b.leases.start();
    await waitUntil(() => acquiredAt, "b to acquire", 10_000);
    // At the moment B owns the account, A's own clock already forbids it any platform call.
    expect(aValidAtTakeover).toBe(false);
    expect(leaseA.deadline()).toBeLessThan(acquiredAt);
    expect(await fencedAt).toBeLessThanOrEqual(acquiredAt);
    expect(leaseA.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(b.leases.held()[0]?.epoch).toBe(2);
  });

  it("renewal keeps a lease past its TTL, and a graceful stop hands it over at once", async () => {
    const url = await server.createDatabase("renew");
    // A TTL with room for a renewal delayed by a loaded machine (a late renewal self-fences, rightly).
    const ttl = 3_000;
    const a = await node({ url, nodeId: "a", units: ["discord:bot"], leaseTtlMs: ttl });
    await a.leases.start();
    const lease = a.leases.held()[0];
    if (!lease) throw new Error("a holds nothing");
    const firstDeadline = lease.deadline();
    await waitUntil(() => lease.deadline() > firstDeadline + ttl, "renewals past one TTL", 15_000);
    expect(lease.valid()).toBe(true);

    let acquired: HeldLease | undefined;
    const b = await node({ url, nodeId: "b", units: ["discord:bot"], leaseTtlMs: 60_000, pollMs: 60_000, onAcquired: (l) => (acquired = l) });
    await b.leases.start();
    expect(acquired).toBeUndefined();
    const before = await b.status();
    expect(before.leases).toMatchObject([{ unit: "discord:bot", holder: "a", epoch: 1 }]);
    expect(before.leases[0]?.expiresInMs).toBeGreaterThan(0);
    expect(before.nodes.map((n) => n.id)).toEqual(["a", "b"]);
    // Released: the row is free at once and `NOTIFY lease_free` wakes B (its own poll is a minute away).
    await a.leases.stop();
    expect(lease.signal.aborted).toBe(true);
    await waitUntil(() => acquired, "b to take the released lease on the notification", 5_000);
    expect(acquired?.epoch).toBe(2);
    const after = await b.status();
    expect(after.leases).toMatchObject([{ unit: "discord:bot", holder: "b", epoch: 2 }]);
    // A left the node table on its graceful stop: the fair share counts B alone.
    expect(after.nodes.map((n) => n.id)).toEqual(["b"]);
  });

  it("while one account winds down for a graceful release, every held lease goes on being renewed", async () => {
    const url = await server.createDatabase("renewduringrelease");
    const ttl = 3_000;
    let windDown!: () => void;
    const windingDown = new Promise<void>((resolve) => (windDown = resolve));
    let releasing: HeldLease | undefined;
    const a = await node({
      url,
      nodeId: "a",
      units: ["discord:slow", "telegram:other"],
      leaseTtlMs: ttl,
      // A gateway that takes its time to close: the release waits for it.
      beforeRelease: async (lease) => {
        releasing = lease;
        await windingDown;
      },
    });
    await a.leases.start();
    const [slow, other] = ["discord:slow", "telegram:other"].map((unit) => a.leases.held().find((l) => l.unit === unit));
    if (!slow || !other) throw new Error("a does not hold both units");
    const released = a.leases.release("discord:slow");
    await waitUntil(() => releasing, "the release to begin winding down");
    const [slowDeadline, otherDeadline] = [slow.deadline(), other.deadline()];
    await waitUntil(() => other.deadline() > otherDeadline + ttl && slow.deadline() > slowDeadline + ttl, "renewals past one TTL during the wind-down", 15_000);
    expect(other.valid()).toBe(true);
    expect(slow.valid()).toBe(true); // still held while it winds down, so its sends in progress are recorded
    windDown();
    await released;
    expect(slow.signal.aborted).toBe(true);
    expect(other.valid()).toBe(true);
  });

  it("a graceful stop goes on renewing every lease until its own release, however long a wind-down takes", async () => {
    const url = await server.createDatabase("renewduringstop");
    const ttl = 3_000;
    // Released in this order (the order they were acquired in): the slow one first, the other waits behind it.
    const units = ["discord:slow", "telegram:next"];
    let windDown!: () => void;
    const windingDown = new Promise<void>((resolve) => (windDown = resolve));
    const releasing: string[] = [];
    const a = await node({
      url,
      nodeId: "a",
      units,
      leaseTtlMs: ttl,
      // A gateway that takes longer than a whole lease to close.
      beforeRelease: async (lease) => {
        releasing.push(lease.unit);
        if (lease.unit === "discord:slow") await windingDown;
      },
    });
    await a.leases.start();
    const leases = units.map((unit) => a.leases.held().find((l) => l.unit === unit));
    if (!leases.every((l) => l !== undefined)) throw new Error("a does not hold both units");
    // How each lease ended, and whether its own release had begun by then.
    const ends: { unit: string; detail: string; releaseBegun: boolean }[] = [];
    for (const lease of leases)
      lease.signal.addEventListener(
        "abort",
        () => {
          const reason: unknown = lease.signal.reason;
          ends.push({
            unit: lease.unit,
            detail: reason instanceof LeaseLostError ? reason.detail : String(reason),
            releaseBegun: releasing.includes(lease.unit),
          });
        },
        { once: true },
      );
    // Another node tries to take each unit a has not let go yet: it must find none free.
    const b = await node({ url, nodeId: "b", units, leaseTtlMs: ttl });
    const takenEarly: string[] = [];
    const tryToTake = async () => {
      for (const unit of units) if (!ends.some((e) => e.unit === unit) && (await b.leases.acquire(unit))) takenEarly.push(unit);
    };

    const stopped = a.leases.stop();
    await waitUntil(() => releasing.length, "the stop to begin winding the first unit down");
    const deadlines = leases.map((l) => l.deadline());
    // Past a whole lease of wind-down: unrenewed, both leases would have ended and b could take them.
    await waitUntil(
      async () => {
        await tryToTake();
        return ends.length > 0 || takenEarly.length > 0 || leases.every((l, i) => l.deadline() > (deadlines[i] ?? 0) + ttl);
      },
      "renewals past one TTL during the stop's wind-down",
      15_000,
      50,
    );
    await tryToTake();
    expect(ends).toEqual([]);
    expect(takenEarly).toEqual([]);
    expect(releasing).toEqual(["discord:slow"]);
    expect(leases.every((l) => l.valid())).toBe(true);

    windDown();
    await stopped;
    // Each ended by its own release, none before it began; then b takes both, one epoch on.
    expect(ends).toEqual(units.map((unit) => ({ unit, detail: "released by this node", releaseBegun: true })));
    expect(await Promise.all(units.map(async (unit) => (await b.leases.acquire(unit))?.epoch))).toEqual([2, 2]);
  });

  it("takes over a killed node's units within the lease time, though that node still counts as live for the fair share", async () => {
    const url = await server.createDatabase("failover");
    const units = ["u1", "u2", "u3", "u4"];
    const ttl = 3_000;
    let released = 0;
    const a = await node({ url, nodeId: "a", units, leaseTtlMs: ttl, pollMs: 100, beforeRelease: async () => void released++ });
    await a.leases.start();
    const b = await node({ url, nodeId: "b", units, leaseTtlMs: ttl, pollMs: 100 });
    await b.leases.start();
    await waitUntil(() => a.leases.held().length === 2 && b.leases.held().length === 2, "2 + 2");
    // B dies without a word (kill -9): its node row stays, so A's fair share is still 2.
    released = 0;
    await b.abandon();
    await waitUntil(() => a.leases.held().length === 4, "a to own all four", 15_000);
    const status = await a.status();
    expect(status.nodes.find((n) => n.id === "b")?.seenAgoMs).toBeLessThan(2 * ttl);
    expect(status.leases.every((l) => l.holder === "a")).toBe(true);
    // Until b stops counting as live, a keeps what it took beyond its share: no unit goes back and
    // forth (each handover runs again what was not recorded).
    await waitUntil(async () => ((await a.status()).nodes.find((n) => n.id === "b")?.seenAgoMs ?? 0) > 2 * ttl, "b to stop counting as live", 15_000);
    expect(
      a.leases
        .held()
        .map((l) => l.unit)
        .sort(),
    ).toEqual(units);
    expect(released).toBe(0);
  });

  it("spreads 5 units fairly over the live nodes and rebalances when a node joins", async () => {
    const url = await server.createDatabase("fairshare");
    const units = ["u1", "u2", "u3", "u4", "u5"];
    const counts = (nodes: PostgresState[]) => nodes.map((n) => n.leases.held().length);
    const ownersDisjoint = (nodes: PostgresState[]) => {
      const all = nodes.flatMap((n) => n.leases.held().map((l) => l.unit));
      return new Set(all).size === all.length;
    };
    const nodes: PostgresState[] = [];
    for (const id of ["n1", "n2", "n3"]) {
      const n = await node({ url, nodeId: id, units, leaseTtlMs: 3_000, pollMs: 100 });
      nodes.push(n);
      await n.leases.start();
      if (id === "n1") expect(counts(nodes)).toEqual([5]);
      // ceil(5/2) = 3 each at most: 3 + 2; ceil(5/3) = 2: 2 + 2 + 1.
      const want = id === "n2" ? [3, 2] : id === "n3" ? [2, 2, 1] : [5];
      await waitUntil(() => JSON.stringify([...counts(nodes)].sort().reverse()) === JSON.stringify(want), `leases spread as ${want.join("/")}`, 15_000);
      expect(ownersDisjoint(nodes)).toBe(true);
    }
    const held = nodes.flatMap((n) => n.leases.held());
    expect(held).toHaveLength(5);
    expect(held.every((l) => l.valid())).toBe(true);
  });

  it("a node whose database goes away as it joins stays up, says so, and takes its units once the database is back", async () => {
    const url = await server.createDatabase("joinlost");
    const a = await node({ url, nodeId: "a", units: ["u1", "u2"], pollMs: 50 });
    await server.kill(); // after the node connected and migrated: its first round cannot reach the database
    try {
      await a.leases.start(); // resolves: the round failed, and the keeper retries
      expect(a.leases.lastRound?.ok).toBe(false);
      expect(a.leases.held()).toEqual([]);
    } finally {
      await server.start();
    }
    await waitUntil(() => a.leases.held().length === 2, "a to take both units once the database is back", 15_000);
    // The round that took them reports itself once its LISTEN connection is back too.
    await waitUntil(() => a.leases.lastRound?.ok, "a round reported as reaching the database");
  });
});
