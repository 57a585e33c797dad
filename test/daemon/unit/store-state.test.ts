import { describe, expect, it } from "vitest";
import { dedupeKeyOf } from "../../../daemon/vocabulary/keys.js";
import { SnapshotSchema, type JournalEntry } from "../../../daemon/vocabulary/records.js";
import { StoreState } from "../../../daemon/state/store-state.js";

const entry = (id: string, seq: number): JournalEntry => ({
  id,
  seq,
  kind: "turn",
  key: dedupeKeyOf({ platform: "fake", accountId: "a", chatId: "c", messageId: id }),
  acceptedAt: 0,
  message: { platform: "fake", accountId: "a", chatId: "c", chatType: "direct", userId: "u", messageId: id, text: id, sentAt: 0 },
  route: { ruleIndex: 0, instanceId: "i", model: "m", scope: "user", sessionBase: "b" },
  sent: 0,
});

describe("StoreState", () => {
  it("a reply marks its members' leader; completion forgets the entries, keeps their keys for dedupe, and says when none is left", () => {
    const state = new StoreState(10);
    let drained = 0;
    state.onDrained(() => drained++);
    state.apply({ t: "msg", s: 1, e: entry("a", 1) });
    state.apply({ t: "msg", s: 2, e: entry("b", 2) });
    state.apply({ t: "reply", s: 3, id: "a", reply: { chunks: ["x"], members: ["a", "b"], format: "markdown" } });
    expect(state.entries.get("b")?.leader).toBe("a");
    state.apply({ t: "done", s: 4, ids: ["a"] });
    expect(drained).toBe(0);
    state.apply({ t: "done", s: 5, ids: ["b"] });
    expect(drained).toBe(1);
    expect(state.entries.size).toBe(0);
    expect(state.knows(entry("a", 1).key)).toBe(true);
    expect(state.lastSeq).toBe(5);
  });

  it("remembers the newest completed keys up to its bound", () => {
    const state = new StoreState(2);
    for (const [i, id] of ["a", "b", "c"].entries()) {
      state.apply({ t: "msg", s: 2 * i + 1, e: entry(id, 2 * i + 1) });
      state.apply({ t: "done", s: 2 * i + 2, ids: [id] });
    }
    expect(["a", "b", "c"].map((id) => state.knows(entry(id, 0).key))).toEqual([false, true, true]);
  });

  it("its snapshot parses as the snapshot file and loads into the same state", () => {
    const state = new StoreState(10);
    state.apply({ t: "msg", s: 1, e: entry("a", 1) });
    state.apply({ t: "msg", s: 2, e: entry("b", 2) });
    state.apply({ t: "done", s: 3, ids: ["a"] });
    state.apply({ t: "session", s: 4, base: "i b", state: { generation: 1, lastResponseId: "resp_1" } });
    state.apply({ t: "kv", s: 5, ns: "n", k: "k", v: { x: 1 } });
    const again = new StoreState(10);
    again.load(SnapshotSchema.parse(JSON.parse(JSON.stringify(state.snapshot()))));
    expect(again.snapshot()).toEqual(state.snapshot());
    expect(again.knows(entry("a", 1).key)).toBe(true);
  });
});
