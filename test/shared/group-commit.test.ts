/**
 * The group-commit primitive's contract (shared/group-commit.ts): batches
 * one at a time in submission order, what arrives meanwhile gathers into the
 * next, each item shares its batch's fate, aborts while waiting, close.
 * Batches are held open with promises the test settles, never with timers.
 */
import { describe, expect, it } from "vitest";
import { GroupCommit, GroupCommitClosedError, type GroupCommitOptions } from "../../shared/group-commit.js";

interface Held {
  batch: readonly number[];
  settle(results?: readonly string[]): void;
  fail(error: unknown): void;
}

/** A group commit whose batches wait until the test settles them. */
function held(options: Omit<GroupCommitOptions<number, string>, "commit"> = {}) {
  const batches: Held[] = [];
  let started: (() => void) | undefined;
  const group = new GroupCommit<number, string>({
    ...options,
    commit: (batch) =>
      new Promise<readonly string[] | undefined>((resolve, reject) => {
        batches.push({ batch: [...batch], settle: resolve, fail: reject });
        started?.();
      }),
  });
  /** Resolves once `n` batches have started. */
  const batchStarted = (n: number) =>
    new Promise<Held>((resolve) => {
      const check = () => {
        if (batches.length >= n) resolve(batches[n - 1]!);
        else started = check;
      };
      check();
    });
  return { group, batches, batchStarted };
}

describe("GroupCommit", () => {
  it("commits a lone item at once ('now') and resolves it with its own result", async () => {
    const { group, batches } = held({ gather: "now" });
    const done = group.submit(1);
    expect(batches.map((b) => b.batch)).toEqual([[1]]);
    expect(group.pending).toBe(1);
    batches[0]!.settle(["one"]);
    await expect(done).resolves.toBe("one");
    await group.onIdle();
    expect(group.pending).toBe(0);
    expect(group.batches).toBe(1);
  });

  it("gathers what arrives while a batch is committed into the next batch, never into the running one", async () => {
    const { group, batches, batchStarted } = held({ gather: "now" });
    const first = group.submit(1);
    const more = [group.submit(2), group.submit(3), group.submit(4)];
    expect(batches).toHaveLength(1);
    expect(group.size).toBe(3);
    batches[0]!.settle();
    await expect(first).resolves.toBeUndefined();
    const second = await batchStarted(2);
    expect(second.batch).toEqual([2, 3, 4]);
    group.submit(5).catch(() => {});
    expect(second.batch).toEqual([2, 3, 4]);
    second.settle(["b", "c", "d"]);
    expect(await Promise.all(more)).toEqual(["b", "c", "d"]);
    (await batchStarted(3)).settle();
    await group.onIdle();
    expect(batches.map((b) => b.batch)).toEqual([[1], [2, 3, 4], [5]]);
  });

  it("by default ('microtask') puts everything submitted in one synchronous run into one batch", async () => {
    const { group, batches, batchStarted } = held();
    const all = [1, 2, 3].map((n) => group.submit(n));
    expect(batches).toHaveLength(0);
    (await batchStarted(1)).settle(["a", "b", "c"]);
    expect(await Promise.all(all)).toEqual(["a", "b", "c"]);
    expect(batches.map((b) => b.batch)).toEqual([[1, 2, 3]]);
  });

  it("starts the first batch when a gather function says", async () => {
    let start: (() => void) | undefined;
    const { group, batches, batchStarted } = held({ gather: (go) => (start = go) });
    const all = [group.submit(1), group.submit(2)];
    expect(batches).toHaveLength(0);
    start!();
    (await batchStarted(1)).settle();
    await Promise.all(all);
    expect(batches.map((b) => b.batch)).toEqual([[1, 2]]);
  });

  it("takes as many as `take` says, from the front, in submission order", async () => {
    const { group, batches, batchStarted } = held({ gather: "microtask", take: (waiting) => (waiting[0]! % 2 === 0 ? 1 : 2) });
    const all = [1, 3, 4, 5, 7].map((n) => group.submit(n));
    for (let n = 1; n <= 3; n++) (await batchStarted(n)).settle();
    await Promise.all(all);
    expect(batches.map((b) => b.batch)).toEqual([[1, 3], [4], [5, 7]]);
  });

  it("rejects every item of a failed batch with its error, and goes on with the next batch", async () => {
    const { group, batches, batchStarted } = held({ gather: "now" });
    const failed = [group.submit(1)];
    const later = group.submit(2);
    const boom = new Error("disk full");
    batches[0]!.fail(boom);
    await expect(failed[0]).rejects.toBe(boom);
    (await batchStarted(2)).settle(["ok"]);
    await expect(later).resolves.toBe("ok");
  });

  it("drops an item whose signal aborts while it waits; one in a batch is committed anyway", async () => {
    const { group, batches, batchStarted } = held({ gather: "now" });
    const inBatch = new AbortController();
    const first = group.submit(1, { signal: inBatch.signal });
    const waiting = new AbortController();
    const dropped = group.submit(2, { signal: waiting.signal });
    const kept = group.submit(3);
    waiting.abort(new Error("caller gone"));
    inBatch.abort(new Error("too late"));
    await expect(dropped).rejects.toThrow("caller gone");
    expect(group.size).toBe(1);
    batches[0]!.settle(["first"]);
    await expect(first).resolves.toBe("first");
    (await batchStarted(2)).settle(["third"]);
    await expect(kept).resolves.toBe("third");
    expect(batches.map((b) => b.batch)).toEqual([[1], [3]]);
    const before = new AbortController();
    before.abort(new Error("already"));
    await expect(group.submit(4, { signal: before.signal })).rejects.toThrow("already");
    expect(group.batches).toBe(2);
  });

  it("close refuses new items and resolves once the submitted ones are settled", async () => {
    const { group, batches, batchStarted } = held({ gather: "now" });
    const first = group.submit(1);
    const second = group.submit(2);
    let closed = false;
    const closing = group.close().then(() => (closed = true));
    await expect(group.submit(3)).rejects.toBeInstanceOf(GroupCommitClosedError);
    batches[0]!.settle();
    (await batchStarted(2)).settle();
    await Promise.all([first, second, closing]);
    expect(closed).toBe(true);
    expect(batches.map((b) => b.batch)).toEqual([[1], [2]]);
    await expect(group.close()).resolves.toBeUndefined();
  });
});
