/**
 * The emulator as a process: what it answered survives a SIGKILL once the
 * flush interval has passed; one emulator per data directory; SIGTERM
 * flushes; flags are checked.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { createServiceClient, ServiceError, type ServiceClient } from "../../shared/client/index.js";
import { outputTextOf } from "../../shared/schemas/responses.js";
import { runCli, startCli, stopCli, type CliRun } from "../helpers/cli.js";
import { providerKey, tempDir } from "../helpers/emulator.js";

/** Stopped when the test finishes (stopping one already stopped is a no-op). */
const stopAtEnd = (...runs: CliRun[]) => {
  for (const run of runs)
    onTestFinished(async () => {
      await stopCli(run);
    });
};

function dataDir(): string {
  const dir = tempDir("agent-bridge-cli-");
  onTestFinished(dir.remove);
  return dir.path;
}

const args = (dir: string, flushMs = 20) => ["--port", "0", "--data-dir", dir, "--provision-ms", "0", "--flush-ms", String(flushMs)];

async function start(dir: string, flushMs?: number) {
  const run = await startCli(args(dir, flushMs));
  stopAtEnd(run);
  return { run, api: createServiceClient({ baseUrl: run.url }) };
}

async function status(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof ServiceError && error.status !== undefined) return error.status;
    throw error;
  }
}

const say = async (api: ServiceClient, instance_id: string, session_id: string, input: string) =>
  outputTextOf(await api.createSessionResponse({ instance_id, session_id, body: { model: "m", input } }));

describe("persistence across a SIGKILL", () => {
  it("finds every answered write after the process is killed and started again on the same directory", async () => {
    const dir = dataDir();
    const first = await start(dir);
    const anon = first.api;

    // A burst of writes of every kind.
    const signup = await anon.signup({ body: { name: "durable" } });
    const org = anon.withKey(signup.api_key);
    await org.updateOrganization({ body: { name: "durable-co", model_api_keys: { anthropic: providerKey("anthropic") } } });
    await anon.adminSetTier({ organization_id: signup.organization.id, body: { tier: "crab" } });
    const a = await org.createInstance({ body: { name: "a" } });
    const b = await org.createInstance({ body: { name: "b", runtime_config: { x: 1 } } });
    await org.updateInstance({ instance_id: a.id, body: { name: "a-renamed" } });
    await org.stopInstance({ instance_id: b.id });
    const key = await org.createKey({ body: { name: "bot", instance_ids: [a.id], permissions: ["read", "interact"] } });
    const revoked = await org.createKey({ body: { name: "old", instance_ids: [a.id], permissions: ["read"] } });
    await org.revokeKey({ key_id: revoked.id });
    const bot = org.withKey(key.raw_key);
    expect(await say(bot, a.id, "alice", "one")).toBe("You said: one");
    expect(await say(bot, a.id, "alice", "two")).toBe("You said: two");
    const other = await anon.signup({ body: { name: "second-org" } });

    // Every write above was answered, so it is on disk already (a write is answered once durable):
    // the kill comes at once, with no chance to clean up.
    expect(await stopCli(first.run, "SIGKILL")).toBe("SIGKILL");
    // The dead process's lock is still there: the next start must take it over.
    const lock = join(dir, "emulator.lock");
    expect(existsSync(lock)).toBe(true);
    expect(Number(readFileSync(lock, "utf8"))).toBe(first.run.child.pid);

    const second = await start(dir);
    const org2 = second.api.withKey(signup.api_key);
    const me = await org2.getOrganization();
    expect(me).toMatchObject({ name: "durable-co", model_providers: ["anthropic"], subscription_tier: "crab", instance_count: 2 });
    expect((await second.api.withKey(other.api_key).getOrganization()).name).toBe("second-org");

    const instances = await org2.listInstances();
    expect(instances.map((i) => [i.name, i.status])).toEqual([
      ["b", "stopped"],
      ["a-renamed", "running"],
    ]);
    expect(instances[0]!.runtime_config).toEqual({ x: 1 });

    const keys = await org2.listKeys();
    expect(keys.map((k) => [k.name, k.is_active])).toEqual([
      ["bot", true],
      ["old", false],
    ]);
    const bot2 = org2.withKey(key.raw_key);
    expect((await bot2.getInstance({ instance_id: a.id })).name).toBe("a-renamed");
    expect(await status(org2.withKey(revoked.raw_key).getInstance({ instance_id: a.id }))).toBe(403);

    // The conversation goes on where it was.
    expect(await say(bot2, a.id, "alice", "!recall")).toBe("one\ntwo");
    expect(await say(bot2, a.id, "bob", "!recall")).toBe("(nothing yet)");

    // And what was written to disk holds no secret in clear.
    await stopCli(second.run, "SIGTERM");
    const state = readFileSync(join(dir, "state.json"), "utf8");
    for (const secret of [signup.api_key, other.api_key, key.raw_key, revoked.raw_key, providerKey("anthropic")]) {
      expect(state).not.toContain(secret);
    }
  });
});

describe("the data-directory lock", () => {
  it("a second emulator on the same directory refuses to start with a clear message and exit code 1", async () => {
    const dir = dataDir();
    const first = await start(dir);
    const second = runCli(args(dir));
    stopAtEnd(second);
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toContain(`in use by another emulator (pid ${first.run.child.pid})`);
    expect(second.stdout()).not.toContain("emulator listening on");
    // The first one is untouched.
    expect((await first.api.signup({ body: { name: "still-here" } })).organization.name).toBe("still-here");
  });

  it("an unreadable state file stops the start with exit code 1 and one clear line, and frees the lock", async () => {
    const dir = dataDir();
    writeFileSync(join(dir, "state.json"), "{ not json");
    const run = runCli(args(dir));
    stopAtEnd(run);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(/^emulator: Cannot read .*state\.json/);
    expect(run.stderr()).not.toContain("    at ");
    expect(existsSync(join(dir, "emulator.lock"))).toBe(false);
    // Nothing overwrote the file it could not read.
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe("{ not json");
  });
});

describe("signals and flags", () => {
  it("SIGTERM flushes pending writes and exits 0", async () => {
    const dir = dataDir();
    // A minute of coalescing: only the shutdown flush can have written this.
    const first = await start(dir, 60_000);
    const signup = await first.api.signup({ body: { name: "flushed" } });
    expect(await stopCli(first.run, "SIGTERM")).toBe(0);
    expect(first.run.stdout()).toContain("SIGTERM");
    expect(existsSync(join(dir, "emulator.lock"))).toBe(false);

    const second = await start(dir);
    expect((await second.api.withKey(signup.api_key).getOrganization()).name).toBe("flushed");
  });

  it("--help prints usage and exits 0; bad flags exit 2 with the reason", async () => {
    const runs = {
      help: runCli(["--help"]),
      unknown: runCli(["--bogus"]),
      port: runCli(["--port", "abc"]),
      provision: runCli(["--provision-ms", "-5"]),
      gateway: runCli(["--gateway-url", "not a url", "--in-memory"]),
    };
    stopAtEnd(...Object.values(runs));
    expect(await runs.help.exited).toBe(0);
    expect(runs.help.stdout()).toMatch(/^Usage: /);
    for (const flag of ["--port", "--data-dir", "--in-memory", "--provision-ms", "--seed", "--admin-token", "--flush-ms"]) {
      expect(runs.help.stdout()).toContain(flag);
    }
    for (const [name, run] of [
      ["unknown", runs.unknown],
      ["port", runs.port],
      ["provision", runs.provision],
      ["gateway", runs.gateway],
    ] as const) {
      expect(await run.exited, name).toBe(2);
      expect(run.stderr(), name).toContain("Usage: ");
      expect(run.stdout(), name).not.toContain("emulator listening on");
    }
    expect(runs.unknown.stderr()).toContain("--bogus");
    expect(runs.port.stderr()).toContain("--port");
  });
});
