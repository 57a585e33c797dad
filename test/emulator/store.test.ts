import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { DataDirLockedError } from "../../shared/durable-files.js";
import { openStore, type Store } from "../../emulator/store/store.js";
import { tempDir } from "../helpers/emulator.js";

function dir(): string {
  const d = tempDir("agent-bridge-store-");
  onTestFinished(d.remove);
  return d.path;
}

async function open(dataDir: string, flushMs = 1): Promise<Store> {
  // Failures are expected in one test: kept off the console.
  const store = await openStore({ dataDir, flushMs, report: () => {} });
  // Closed when the test finishes (closing a closed store is a no-op); write failures are what some tests provoke, not a clean-up error.
  onTestFinished(() => store.close().catch(() => {}));
  return store;
}

/** A UUID v4 of the minted form for a readable name (the store refuses other ids on read). */
const idOf = (name: string) => {
  const h = createHash("sha256").update(name).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

const addOrg = (store: Store, name: string) => {
  const id = idOf(name);
  store.data.organizations[id] = {
    id,
    name,
    tier: "shrimp",
    provider_keys: {},
    instance_ids: [],
    key_ids: [],
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
  };
  store.commit();
};

const onDisk = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, "state.json"), "utf8")) as { organizations: Record<string, unknown> };
const namesOnDisk = (dataDir: string) =>
  Object.values(onDisk(dataDir).organizations as Record<string, { name: string }>)
    .map((o) => o.name)
    .sort();

describe("store", () => {
  it("coalesces a burst of commits into one atomic write, leaving no temporary file", async () => {
    const d = dir();
    const store = await open(d, 20);
    for (let i = 0; i < 50; i++) addOrg(store, `org-${i}`);
    await store.flush();
    expect(store.writes).toBe(1);
    expect(Object.keys(onDisk(d).organizations)).toHaveLength(50);
    expect(readdirSync(d).sort()).toEqual(["conversations", "emulator.lock", "state.json"]);
  });

  it("removes at start the temporary files a crash left mid-write, and nothing else", async () => {
    const d = dir();
    const first = await open(d);
    addOrg(first, "kept");
    await first.close();
    // What a kill -9 between writing the temporary file and renaming it leaves behind.
    writeFileSync(join(d, ".state.json.4242.0a1b2c3d4e5f.tmp"), '{"half":');
    writeFileSync(join(d, "notes.txt"), "a file of the user's");
    const second = await open(d);
    expect(readdirSync(d).sort()).toEqual(["conversations", "emulator.lock", "notes.txt", "state.json"]);
    expect(Object.values(second.data.organizations).map((o) => o.name)).toEqual(["kept"]);
  });

  it("reads back what it wrote", async () => {
    const d = dir();
    const first = await open(d);
    addOrg(first, "kept");
    await first.close();
    const second = await open(d);
    expect(Object.keys(second.data.organizations)).toEqual([idOf("kept")]);
  });

  it("keeps writing after a write failed, and does not lose the change that failed", async () => {
    const root = dir();
    const d = join(root, "data");
    const store = await open(d);
    addOrg(store, "first");
    await store.flush();

    // A file takes the directory's place: the next write fails...
    rmSync(d, { recursive: true, force: true });
    writeFileSync(d, "not a directory");
    addOrg(store, "second");
    await expect(store.flush()).rejects.toThrow();

    // ...and once the directory is back, the next flush writes everything, the failed change included.
    rmSync(d);
    mkdirSync(d);
    await store.flush();
    expect(namesOnDisk(d)).toEqual(["first", "second"]);
    addOrg(store, "third");
    await store.flush();
    expect(namesOnDisk(d)).toEqual(["first", "second", "third"]);
  });

  it("one store per directory; the lock is released on close", async () => {
    const d = dir();
    const first = await open(d);
    await expect(openStore({ dataDir: d })).rejects.toBeInstanceOf(DataDirLockedError);
    await first.close();
    expect(existsSync(join(d, "emulator.lock"))).toBe(false);
    await open(d);
  });

  it("takes over a lock whose process is gone", async () => {
    const d = dir();
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    writeFileSync(join(d, "emulator.lock"), dead.stdout);
    const store = await open(d);
    expect(readFileSync(join(d, "emulator.lock"), "utf8")).toBe(String(process.pid));
    addOrg(store, "mine");
    await store.flush();
  });

  it("refuses a state file of another version, and frees the lock", async () => {
    const d = dir();
    writeFileSync(join(d, "state.json"), JSON.stringify({ version: 99 }));
    await expect(openStore({ dataDir: d })).rejects.toThrow(/version 99/);
    expect(existsSync(join(d, "emulator.lock"))).toBe(false);
  });
});

describe("a large state: changed records appended to state.log", () => {
  const logOf = (d: string) => (existsSync(join(d, "state.log")) ? readFileSync(join(d, "state.log"), "utf8") : "");
  /** A state past the size state.json is rewritten whole at (256 KiB): 2,000 organizations. */
  async function large(d: string, organizations = 2_000): Promise<Store> {
    const store = await open(d);
    for (let i = 0; i < organizations; i++) addOrg(store, `org-${i}`);
    await store.flush();
    return store;
  }

  it("a write's bytes follow the change, not the number of organizations stored", async () => {
    const small = await large(dir(), 2_000);
    const big = await large(dir(), 8_000);
    const appended = async (store: Store) => {
      const before = logOf(store.dataDir!).length;
      const org = Object.values(store.data.organizations)[0]!;
      org.name = "renamed";
      store.commit();
      await store.flush();
      return logOf(store.dataDir!).length - before;
    };
    const a = await appended(small);
    const b = await appended(big);
    expect(a).toBeGreaterThan(0);
    expect(a).toBeLessThan(1000);
    expect(b).toBe(a);
  });

  it("a restart replays the log, and folds it into state.json", async () => {
    const d = dir();
    const store = await large(d);
    const stateBefore = readFileSync(join(d, "state.json"), "utf8");
    addOrg(store, "late");
    delete store.data.organizations[idOf("org-0")];
    await store.flush();
    // Nothing rewrote state.json: the two changes are two lines of the log.
    expect(readFileSync(join(d, "state.json"), "utf8")).toBe(stateBefore);
    expect(logOf(d).trim().split("\n")).toHaveLength(2);
    await store.close();
    const again = await open(d);
    expect(again.data.organizations[idOf("late")]?.name).toBe("late");
    expect(again.data.organizations[idOf("org-0")]).toBeUndefined();
    expect(logOf(d)).toBe("");
    expect(namesOnDisk(d)).toContain("late");
  });

  it("drops a last line a crash cut short, and refuses a broken line before it", async () => {
    const d = dir();
    const store = await large(d);
    addOrg(store, "kept");
    await store.flush();
    await store.close();
    writeFileSync(join(d, "state.log"), `${logOf(d)}{"c":"organizations","id":"${idOf("torn")}","v":{"na`);
    const again = await open(d);
    expect(again.data.organizations[idOf("kept")]?.name).toBe("kept");
    expect(again.data.organizations[idOf("torn")]).toBeUndefined();
    await again.close();
    writeFileSync(join(d, "state.log"), `{"c":"organizations","id":"not-an-id","v":{}}\n`);
    await expect(open(d)).rejects.toThrow(/state.log line 1/);
  });
});
