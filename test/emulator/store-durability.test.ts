/**
 * Issue 8, observations 1, 5 and 7 at the store: a write that fails keeps
 * the state in memory, is retried on its own, shows in health and is
 * reported once; conversations are appended, never rewritten with the
 * control state; temporary files are unique per writer.
 */
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { tempPrefixOf, writeFileAtomic } from "../../shared/durable-files.js";
import { record } from "../../emulator/gateway/conversation.js";
import { headKey } from "../../emulator/store/state.js";
import type { StoredResponse } from "../../emulator/gateway/types.js";
import { openStore, type Store, type StoreOptions } from "../../emulator/store/store.js";
import { tempDir } from "../helpers/emulator.js";

function dir(): string {
  const d = tempDir("agent-bridge-durable-");
  onTestFinished(d.remove);
  return d.path;
}

async function open(dataDir: string, options: StoreOptions = {}): Promise<Store> {
  const store = await openStore({ dataDir, flushMs: 1, ...options });
  // Closed when the test finishes (closing a closed store is a no-op); write failures are what some tests provoke, not a clean-up error.
  onTestFinished(() => store.close().catch(() => {}));
  return store;
}

const INSTANCE = "11111111-1111-4111-8111-111111111111";
const OTHER = "22222222-2222-4222-8222-222222222222";
let n = 0;
const turn = (instance_id: string, session: string, parent_id: string | null = null): StoredResponse => ({
  id: `resp_${(++n).toString(16).padStart(32, "0")}`,
  instance_id,
  session,
  parent_id,
  input_text: `in ${n}`,
  output_text: `out ${n}`,
  model: "m",
  created_at: 1_700_000_000,
});
const say = (store: Store, response: StoredResponse) => {
  record(store.data.gateway, response);
  store.recordResponse(response);
  return response;
};

describe("writeFileAtomic", () => {
  it("two writers to one path never share a temporary file: every write succeeds whole", async () => {
    const d = dir();
    const file = join(d, "state.json");
    const contents = Array.from({ length: 20 }, (_, i) => JSON.stringify({ writer: i, pad: "x".repeat(64 * 1024) }));
    await Promise.all(contents.map((c) => writeFileAtomic(file, c)));
    expect(contents).toContain(readFileSync(file, "utf8"));
    expect(readdirSync(d)).toEqual(["state.json"]);
  });

  it("names its temporary files with the prefix tests exclude", async () => {
    const d = dir();
    const file = join(d, "state.json");
    // Sampled while writes of 1 MiB are under way: whatever shows beside the file has the prefix.
    const seen: string[] = [];
    const watcher = setInterval(() => seen.push(...readdirSync(d)), 0);
    await Promise.all(Array.from({ length: 5 }, () => writeFileAtomic(file, "x".repeat(1 << 20))));
    clearInterval(watcher);
    for (const name of seen) expect(name === "state.json" || name.startsWith(tempPrefixOf(file)), name).toBe(true);
  });
});

describe("a failed write", () => {
  it("keeps the state in memory, is retried without another commit, shows in health, and is reported once", async () => {
    const d = dir();
    const reports: string[] = [];
    const store = await open(d, { flushMs: 1, maxRetryMs: 20, report: (m) => reports.push(m) });
    // A value JSON cannot write (as a 5,000-deep config once was): every write fails until it goes.
    (store.data as unknown as Record<string, unknown>).poison = 1n;
    store.data.billing["0".repeat(32)] = { id: "0".repeat(32), organization_id: INSTANCE, kind: "portal", tier: null, created_at: "2026-01-01T00:00:00.000Z" };
    store.commit();
    await vi.waitFor(() => expect(store.health().failed_attempts).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    expect(store.health()).toMatchObject({ ok: false, pending: true, last_error: expect.stringContaining("BigInt") });
    expect(store.health().failing_since).toMatch(/^\d{4}-/);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatch(/writing state failed/);

    // The state in memory is intact: once the cause is gone, the retry alone (no commit) writes it.
    delete (store.data as unknown as Record<string, unknown>).poison;
    await vi.waitFor(() => expect(store.health()).toMatchObject({ ok: true, pending: false }), { timeout: 5_000 });
    expect(JSON.parse(readFileSync(join(d, "state.json"), "utf8")).billing).toHaveProperty("0".repeat(32));
    expect(reports).toHaveLength(2);
    expect(reports[1]).toMatch(/recovered/);
  });
});

describe("conversations in append-only logs", () => {
  it("a turn appends one line to its instance's log and leaves state.json alone; a restart finds chains and heads", async () => {
    const d = dir();
    const store = await open(d);
    store.commit();
    await store.flush();
    const controlWrites = store.controlWrites;
    const stateBefore = statSync(join(d, "state.json")).mtimeMs;

    const a1 = say(store, turn(INSTANCE, "alice"));
    const a2 = say(store, turn(INSTANCE, "alice", a1.id));
    const b1 = say(store, turn(INSTANCE, "bob"));
    const o1 = say(store, turn(OTHER, "main"));
    await store.flush();
    expect(store.controlWrites).toBe(controlWrites);
    expect(statSync(join(d, "state.json")).mtimeMs).toBe(stateBefore);
    const log = readFileSync(join(d, "conversations", `${INSTANCE}.jsonl`), "utf8")
      .trim()
      .split("\n");
    expect(log.map((l) => JSON.parse(l).id)).toEqual([a1.id, a2.id, b1.id]);

    // Another turn appends exactly one line.
    const sizeBefore = statSync(join(d, "conversations", `${INSTANCE}.jsonl`)).size;
    const a3 = say(store, turn(INSTANCE, "alice", a2.id));
    await store.flush();
    expect(statSync(join(d, "conversations", `${INSTANCE}.jsonl`)).size).toBe(sizeBefore + Buffer.byteLength(`${JSON.stringify(a3)}\n`));
    await store.close();

    const again = await open(d);
    // Logs are read on first use, not at start.
    expect(again.data.gateway.responses).toEqual({});
    await again.conversations(INSTANCE);
    expect(Object.keys(again.data.gateway.responses).sort()).toEqual([a1.id, a2.id, a3.id, b1.id].sort());
    await again.allConversations();
    expect(Object.keys(again.data.gateway.responses).sort()).toEqual([a1.id, a2.id, a3.id, b1.id, o1.id].sort());
    expect(again.data.gateway.heads).toEqual({ [headKey(INSTANCE, "alice")]: a3.id, [headKey(INSTANCE, "bob")]: b1.id, [headKey(OTHER, "main")]: o1.id });
  });

  it("drops a torn last line (a crash mid-append) and appends after it cleanly", async () => {
    const d = dir();
    const store = await open(d);
    const kept = say(store, turn(INSTANCE, "main"));
    await store.close();
    const file = join(d, "conversations", `${INSTANCE}.jsonl`);
    appendFileSync(file, '{"id":"resp_torn","instance_');

    const again = await open(d);
    // Truncated at start, before anything can be appended after the fragment.
    expect(readFileSync(file, "utf8")).toBe(`${JSON.stringify(kept)}\n`);
    await again.allConversations();
    expect(Object.keys(again.data.gateway.responses)).toEqual([kept.id]);
    const next = say(again, turn(INSTANCE, "main", kept.id));
    await again.close();
    const third = await open(d);
    await third.allConversations();
    expect(third.data.gateway.heads[headKey(INSTANCE, "main")]).toBe(next.id);
  });

  it("removes an instance's log with it, and rewrites every log on replace", async () => {
    const d = dir();
    const store = await open(d);
    say(store, turn(INSTANCE, "main"));
    const other = say(store, turn(OTHER, "main"));
    await store.flush();
    store.dropConversations(INSTANCE);
    await store.flush();
    expect(readdirSync(join(d, "conversations"))).toEqual([`${OTHER}.jsonl`]);

    store.replace({ ...store.data, gateway: { responses: {}, heads: {} } });
    await store.flush();
    expect(readdirSync(join(d, "conversations"))).toEqual([]);
    expect(store.data.gateway.responses[other.id]).toBeUndefined();
  });

  it("removes the log of an instance whose conversations were never read since the start", async () => {
    const d = dir();
    const store = await open(d);
    say(store, turn(INSTANCE, "main"));
    await store.close();
    const again = await open(d);
    again.dropConversations(INSTANCE);
    await again.flush();
    expect(readdirSync(join(d, "conversations"))).toEqual([]);
    // And it is not read back later either.
    await again.conversations(INSTANCE);
    expect(again.data.gateway.responses).toEqual({});
  });

  it("moves conversations out of a state.json written before the split, once", async () => {
    const d = dir();
    const legacy = turn(INSTANCE, "main");
    writeFileSync(
      join(d, "state.json"),
      JSON.stringify({
        version: 1,
        organizations: {},
        credentials: {},
        keys: {},
        instances: {},
        billing: {},
        gateway: { responses: { [legacy.id]: legacy }, heads: { [headKey(INSTANCE, "main")]: legacy.id } },
      }),
    );
    const store = await open(d);
    expect(store.data.gateway.responses[legacy.id]).toEqual(legacy);
    await store.close();
    expect(JSON.parse(readFileSync(join(d, "state.json"), "utf8"))).not.toHaveProperty("gateway");
    const again = await open(d);
    await again.allConversations();
    expect(again.data.gateway.heads[headKey(INSTANCE, "main")]).toBe(legacy.id);
  });
});
