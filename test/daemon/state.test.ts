import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import type { InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { dedupeKeyOf as dedupeKey, sessionKeyOf } from "../../daemon/vocabulary/keys.js";
import { DataDirLockedError, openStore } from "../../daemon/state/store.js";
import type { Store } from "../../daemon/vocabulary/store.js";
import type { StoredRoute } from "../../daemon/vocabulary/records.js";

/** A session key as the relay makes it (instance, session base). */
const K = sessionKeyOf({ instanceId: "i", sessionBase: "k" });

/** Stores a test ended itself (a crash, a close): not abandoned again when it finishes. */
const ended = new WeakSet<Store>();

const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "bridge-state-"));
  onTestFinished(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

const clock = createManualClock();
const openAt = async (dataDir: string, extra: { compactBytes?: number } = {}) => {
  const s = await openStore({ dataDir, clock, random: seededRandom(dataDir), ...extra });
  onTestFinished(async () => {
    if (!ended.has(s)) await s.abandon();
  });
  return s;
};
/** What a crash leaves: nothing more written, the lock freed. */
const crash = async (s: Store) => {
  ended.add(s);
  await s.abandon();
};

const route: StoredRoute = { ruleIndex: 0, instanceId: "inst-1", model: "m", scope: "user", sessionBase: "fake.fake.dm.alice" };
let n = 0;
const message = (text: string, extra: Partial<InboundMessage> = {}): InboundMessage => ({
  platform: "fake",
  accountId: "acct",
  chatId: "alice",
  chatType: "direct",
  userId: "alice",
  messageId: `id-${++n}`,
  text,
  sentAt: clock.now(),
  ...extra,
});
const add = (s: Store, m: InboundMessage) => s.add({ kind: "turn", key: dedupeKey(m), message: m, route });

describe("store", () => {
  it("keeps accepted messages across a crash, in acceptance order, with their attachments", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const texts = ["one", "two", "three", "four"];
    const photo = Buffer.from([0, 1, 2, 3, 250, 251]);
    await Promise.all(texts.map((t, i) => add(s1, message(t, i === 2 ? { attachments: [{ kind: "photo", fileName: "../cat pic.png", data: photo }] } : {}))));
    await crash(s1);

    const s2 = await openAt(dir);
    const pending = s2.pending();
    expect(pending.map((e) => e.message.text)).toEqual(texts);
    expect(pending.map((e) => e.seq)).toEqual([...pending.map((e) => e.seq)].sort((a, b) => a - b));
    const withFile = pending[2]!;
    const att = withFile.message.attachments?.[0];
    expect(att?.fileName).toBe("../cat pic.png");
    expect(att?.file).not.toContain("..");
    expect(readFileSync(s2.attachmentPath(att!))).toEqual(photo);
  });

  it("dedupes by platform, account, chat and message id, also after completion and restart", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const m = message("hi");
    expect(s1.has(dedupeKey(m))).toBe(false);
    const pendingAdd = add(s1, m);
    // Known at once, before the write lands: a concurrent duplicate cannot slip in.
    expect(s1.has(dedupeKey(m))).toBe(true);
    const e = await pendingAdd;
    expect(s1.has(dedupeKey({ ...m, chatId: "other" }))).toBe(false);
    expect(s1.has(dedupeKey({ ...m, accountId: "acct2" }))).toBe(false);
    await s1.complete([e.id]);
    expect(s1.pending()).toEqual([]);
    expect(s1.has(dedupeKey(m))).toBe(true);
    await crash(s1);
    const s2 = await openAt(dir);
    expect(s2.has(dedupeKey(m))).toBe(true);
    await s2.compact();
    await crash(s2);
    const s3 = await openAt(dir);
    expect(s3.has(dedupeKey(m))).toBe(true);
  });

  it("records the reply and per-chunk progress durably, and forgets entries and spool once done", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const a = await add(s1, message("a", { attachments: [{ kind: "document", fileName: "x.txt", data: Buffer.from("x") }] }));
    const b = await add(s1, message("b"));
    await s1.recordReply(
      a.id,
      { chunks: ["c1", "c2", "c3"], members: [a.id, b.id], format: "markdown" },
      { key: K, state: { generation: 2, lastResponseId: "resp_1" } },
    );
    await s1.recordSent(a.id, 1);
    await crash(s1);

    const s2 = await openAt(dir);
    const lead = s2.get(a.id)!;
    expect(lead.reply).toEqual({ chunks: ["c1", "c2", "c3"], members: [a.id, b.id], format: "markdown" });
    expect(lead.sent).toBe(1);
    expect(s2.get(b.id)?.leader).toBe(a.id);
    expect(s2.session(K)).toEqual({ generation: 2, lastResponseId: "resp_1" });
    const spooled = s2.attachmentPath(lead.message.attachments![0]!);
    expect(existsSync(spooled)).toBe(true);
    await s2.recordSent(a.id, 3);
    await s2.complete([a.id, b.id]);
    expect(existsSync(spooled)).toBe(false);
    await crash(s2);
    const s3 = await openAt(dir);
    expect(s3.pending()).toEqual([]);
  });

  it("records a streamed reply's preview (planner state and message ids) across a crash and a compaction, and forgets it when closed", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const a = await add(s1, message("a"));
    const preview = {
      state: {
        messages: [{ target: "Hello, wor", shown: "Hello, wor", final: false, broken: false, replaced: false, deleted: false }],
        restStart: 0,
        reopen: "",
        text: "Hello, wor",
        finished: false,
        degraded: false,
        gaveUp: false,
      },
      ids: ["42"],
    };
    await s1.recordPreview(a.id, preview);
    await crash(s1);
    const s2 = await openAt(dir);
    expect(s2.get(a.id)?.preview).toEqual(preview);
    await s2.recordReply(a.id, { chunks: ["Hello, world."], members: [a.id], format: "markdown", text: "Hello, world." });
    await s2.compact();
    await crash(s2);
    const s3 = await openAt(dir);
    expect(s3.get(a.id)?.preview).toEqual(preview);
    expect(s3.get(a.id)?.reply?.text).toBe("Hello, world.");
    await s3.recordPreview(a.id, null);
    await crash(s3);
    const s4 = await openAt(dir);
    expect(s4.get(a.id)?.preview).toBeUndefined();
  });

  it("compacts the journal into a snapshot once it grows, and replays the same state", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir, { compactBytes: 4096 });
    const kv = s1.kv("adapter:telegram:bot");
    const keep: string[] = [];
    for (let i = 0; i < 60; i++) {
      const e = await add(s1, message(`message ${i} ${"x".repeat(50)}`));
      await kv.set("offset", i);
      if (i % 3 === 0) keep.push(e.id);
      else await s1.complete([e.id]);
    }
    await s1.setSession(K, { generation: 1 });
    expect(existsSync(join(dir, "snapshot.json"))).toBe(true);
    // It never grows far past the threshold: each compaction empties it.
    expect(statSync(join(dir, "journal.jsonl")).size).toBeLessThan(4096 + 1024);
    await crash(s1);

    const s2 = await openAt(dir, { compactBytes: 4096 });
    expect(s2.pending().map((e) => e.id)).toEqual(keep);
    expect(s2.kv("adapter:telegram:bot").get("offset")).toBe(59);
    expect(s2.kv("adapter:discord:bot").get("offset")).toBeUndefined();
    expect(s2.session(K)).toEqual({ generation: 1 });
  });

  it("applies nothing twice when a crash hit between snapshot and truncation", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const a = await add(s1, message("a"));
    await s1.recordReply(a.id, { chunks: ["x", "y"], members: [a.id], format: "plain" });
    await s1.recordSent(a.id, 1);
    const b = await add(s1, message("b"));
    await s1.complete([b.id]);
    const journalBefore = readFileSync(join(dir, "journal.jsonl"));
    await s1.compact();
    await crash(s1);
    // The snapshot landed but the journal was never emptied.
    writeFileSync(join(dir, "journal.jsonl"), journalBefore);
    const s2 = await openAt(dir);
    expect(s2.pending().map((e) => [e.id, e.sent])).toEqual([[a.id, 1]]);
    // New records after such a restart still count.
    await s2.recordSent(a.id, 2);
    await crash(s2);
    const s3 = await openAt(dir);
    expect(s3.get(a.id)?.sent).toBe(2);
  });

  it("drops a torn last line and keeps appending cleanly after it", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const a = await add(s1, message("a"));
    await crash(s1);
    appendFileSync(join(dir, "journal.jsonl"), '{"t":"msg","s":99,"e":{"id":"tor');
    const s2 = await openAt(dir);
    expect(s2.pending().map((e) => e.id)).toEqual([a.id]);
    const b = await add(s2, message("b"));
    await crash(s2);
    const s3 = await openAt(dir);
    expect(s3.pending().map((e) => e.id)).toEqual([a.id, b.id]);
  });

  it("refuses a second store on the same dataDir while the first lives, and takes over a dead owner's lock", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    await expect(openStore({ dataDir: dir, clock })).rejects.toBeInstanceOf(DataDirLockedError);
    await s1.close();
    ended.add(s1);
    const s2 = await openAt(dir);
    await crash(s2);

    // A lock left by a process that no longer exists.
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    writeFileSync(join(dir, "daemon.lock"), dead.stdout);
    const s3 = await openAt(dir);
    expect(readFileSync(join(dir, "daemon.lock"), "utf8")).toBe(String(process.pid));
    await crash(s3);
  });

  it("keeps adapter key-values namespaced and durable, deleting on undefined", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    await s1.kv("a").set("k", { offset: 5 });
    await s1.kv("b").set("k", "other");
    await s1.kv("b").set("gone", 1);
    await s1.kv("b").set("gone", undefined);
    await crash(s1);
    const s2 = await openAt(dir);
    expect(s2.kv("a").get("k")).toEqual({ offset: 5 });
    expect(s2.kv("b").get("k")).toBe("other");
    expect(s2.kv("b").get("gone")).toBeUndefined();
  });
});

describe("state read back is checked", () => {
  it("a snapshot from a newer daemon stops the start with an error saying so", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "snapshot.json"), JSON.stringify({ version: 2, lastSeq: 0, entries: [], sessions: {}, kv: {}, recentKeys: [] }));
    await expect(openStore({ dataDir: dir, clock, lock: false })).rejects.toMatchObject({
      name: "StateFileError",
      message: expect.stringMatching(/snapshot\.json: written by a newer daemon \(state version 2/),
    });
  });

  it("a snapshot that does not match the schema, or is not JSON, is refused with the file and the field named", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "snapshot.json"), JSON.stringify({ version: 1, lastSeq: 3, entries: [{ id: 7 }], sessions: {}, kv: {}, recentKeys: [] }));
    await expect(openStore({ dataDir: dir, clock, lock: false })).rejects.toThrow(/snapshot\.json: not a valid snapshot \(entries\.0\.id/);
    writeFileSync(join(dir, "snapshot.json"), "{ not json");
    await expect(openStore({ dataDir: dir, clock, lock: false })).rejects.toThrow(/snapshot\.json: not valid JSON/);
  });

  it("a journal record of another shape or a newer version is refused, not cast", async () => {
    const dir = tempDir();
    const s = await openAt(dir);
    await add(s, message("kept"));
    await crash(s);
    appendFileSync(join(dir, "journal.jsonl"), `${JSON.stringify({ t: "sent", s: 99, id: "x", n: "three" })}\n`);
    await expect(openStore({ dataDir: dir, clock, lock: false })).rejects.toThrow(/journal\.jsonl line 2: not a valid journal record \(n:/);
    const lines = readFileSync(join(dir, "journal.jsonl"), "utf8").split("\n").filter(Boolean);
    writeFileSync(join(dir, "journal.jsonl"), `${lines[0]}\n${JSON.stringify({ ver: 2, t: "sent", s: 2, id: "x", n: 1 })}\n`);
    await expect(openStore({ dataDir: dir, clock, lock: false })).rejects.toThrow(/written by a newer daemon/);
  });

  it("a journaled entry's dedupe key is read back as one, in the format it was written in", async () => {
    const dir = tempDir();
    const s1 = await openAt(dir);
    const m = message("kept");
    const e = await add(s1, m);
    await crash(s1);
    const line = readFileSync(join(dir, "journal.jsonl"), "utf8").split("\n")[0]!;
    // The format on disk since the first version: a JSON array of platform, account, chat and message id.
    expect(JSON.parse(line).e.key).toBe(JSON.stringify(["fake", "acct", "alice", m.messageId]));
    const s2 = await openAt(dir);
    expect(s2.get(e.id)?.key).toBe(dedupeKey(m));
    expect(s2.has(dedupeKey(m))).toBe(true);
    await crash(s2);
    writeFileSync(join(dir, "journal.jsonl"), `${line.replace(JSON.stringify(JSON.stringify(["fake", "acct", "alice", m.messageId])), '"fake alice"')}\n`);
    await expect(openStore({ dataDir: dir, clock, lock: false })).rejects.toThrow(
      /journal\.jsonl line 1: not a valid journal record \(e\.key: not a dedupe key/,
    );
  });
});
