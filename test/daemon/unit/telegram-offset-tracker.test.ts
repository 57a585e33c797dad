/**
 * Long polling's offset, without HTTP: it moves only over updates the core
 * accepted, whatever order a batch's chats finish in; an update that failed
 * holds it (and comes again) while what was handled behind it is not handed
 * over twice; a restart resumes from the saved offset unless it is older than
 * Telegram keeps updates.
 */
import { describe, expect, it } from "vitest";
import { createOffsetTracker, OFFSET_TTL_MS } from "../../../daemon/adapters/telegram/offset-tracker.js";

const NOW = 1_700_000_000_000;

describe("createOffsetTracker", () => {
  it("starts without an offset when nothing was saved, and moves over a batch handled in full", () => {
    const tracker = createOffsetTracker({ now: NOW });
    expect(tracker.origin).toBe("none");
    expect(tracker.nextPollOffset()).toBeUndefined();
    const batch = [5, 6, 7];
    expect(tracker.pending(batch)).toEqual([5, 6, 7]);
    for (const id of batch) tracker.handled(id);
    expect(tracker.settle(batch)).toEqual({ moved: 7, complete: true });
    expect(tracker.offset).toBe(7);
    expect(tracker.nextPollOffset()).toBe(8);
  });

  it("moves over the longest handled prefix when chats finish out of order", () => {
    const tracker = createOffsetTracker({ now: NOW });
    const batch = [10, 11, 12, 13];
    // Chat B (11, 13) finished before chat A (10, 12) had started.
    tracker.handled(13);
    tracker.handled(11);
    expect(tracker.settle(batch)).toEqual({ moved: undefined, complete: false });
    expect(tracker.nextPollOffset()).toBeUndefined();
    // The next poll brings the whole batch again: only chat A's updates are still to hand over.
    expect(tracker.pending(batch)).toEqual([10, 12]);
    tracker.handled(10);
    tracker.handled(12);
    expect(tracker.settle(batch)).toEqual({ moved: 13, complete: true });
    expect(tracker.nextPollOffset()).toBe(14);
  });

  it("holds the offset at an update that failed, and hands over only it and what its chat kept back", () => {
    const tracker = createOffsetTracker({ now: NOW });
    const batch = [20, 21, 22, 23];
    tracker.handled(20);
    // 21 failed (its chat's 23 waits behind it); 22 is another chat's, handled.
    tracker.handled(22);
    expect(tracker.settle(batch)).toEqual({ moved: 20, complete: false });
    expect(tracker.nextPollOffset()).toBe(21);
    const again = [21, 22, 23];
    expect(tracker.pending(again)).toEqual([21, 23]);
    tracker.handled(21);
    tracker.handled(23);
    expect(tracker.settle(again)).toEqual({ moved: 23, complete: true });
  });

  it("does not move, nor report a move, when nothing of the batch was handled", () => {
    const tracker = createOffsetTracker({ saved: { updateId: 40, savedAt: NOW }, now: NOW });
    expect(tracker.settle([41, 42])).toEqual({ moved: undefined, complete: false });
    expect(tracker.offset).toBe(40);
    expect(tracker.nextPollOffset()).toBe(41);
  });

  it("restarts from the saved offset, so nothing handled is asked for again", () => {
    const tracker = createOffsetTracker({ saved: { updateId: 99, savedAt: NOW - 60_000 }, now: NOW });
    expect(tracker.origin).toBe("resumed");
    expect(tracker.offset).toBe(99);
    expect(tracker.nextPollOffset()).toBe(100);
  });

  it("drops a saved offset older than Telegram keeps updates (ids may restart lower)", () => {
    const stale = createOffsetTracker({ saved: { updateId: 99, savedAt: NOW - OFFSET_TTL_MS - 1 }, now: NOW });
    expect(stale.origin).toBe("expired");
    expect(stale.nextPollOffset()).toBeUndefined();
    // A lower id after the restart moves the offset down from nothing, not up from 99.
    stale.handled(3);
    expect(stale.settle([3])).toEqual({ moved: 3, complete: true });
    const justInTime = createOffsetTracker({ saved: { updateId: 99, savedAt: NOW - OFFSET_TTL_MS }, now: NOW });
    expect(justInTime.nextPollOffset()).toBe(100);
    const shortTtl = createOffsetTracker({ saved: { updateId: 99, savedAt: NOW - 1001 }, now: NOW, ttlMs: 1000 });
    expect(shortTtl.origin).toBe("expired");
  });

  it("keeps a saved offset without a save time (written before times were kept)", () => {
    const tracker = createOffsetTracker({ saved: { updateId: 7 }, now: NOW + 10 * OFFSET_TTL_MS });
    expect(tracker.origin).toBe("resumed");
    expect(tracker.nextPollOffset()).toBe(8);
  });
});
