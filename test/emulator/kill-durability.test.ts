/**
 * Issue 8, observation 4: the durability window must not grow with the
 * state. The emulator runs as a process with more than 10 MB of state,
 * under a write load of scoped-key creations and conversation turns, and is
 * killed with SIGKILL mid-load. After a restart on the same directory, every
 * write answered more than `flushMs` + 50 ms before the kill is there; in
 * fact every answered write is (writes are answered once they are on disk).
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, request } from "undici";
import { describe, expect, it, onTestFinished } from "vitest";
import { startCli, stopCli } from "../helpers/cli.js";
import { providerKey, tempDir } from "../helpers/emulator.js";

const FLUSH_MS = 25;

async function call(agent: Agent, base: string, method: "GET" | "POST" | "PATCH", path: string, key: string | null, body?: unknown) {
  const res = await request(`${base}${path}`, {
    method,
    dispatcher: agent,
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text || "null") as Answer;
}

/** The members this test reads from the answers it gets (signup, instance, key, turn, snapshot). */
interface Answer {
  id: string;
  api_key: string;
  keys: Record<string, unknown>;
  gateway: { responses: Record<string, unknown> };
}

const start = async (dir: string) => {
  const run = await startCli(["--port", "0", "--data-dir", dir, "--provision-ms", "0", "--flush-ms", String(FLUSH_MS)], 60_000);
  // Stopped when the test finishes (stopping one already stopped is a no-op).
  onTestFinished(async () => {
    await stopCli(run);
  });
  return run;
};

describe("kill -9 under write load with a large state", () => {
  it("keeps every write answered more than flushMs + 50 ms before the kill", { timeout: 120_000 }, async () => {
    const tmp = tempDir("agent-bridge-kill-");
    onTestFinished(tmp.remove);
    const dir = tmp.path;
    const agent = new Agent({ connections: 16, keepAliveTimeout: 10_000 });
    onTestFinished(() => agent.destroy());

    // An organization with a running instance, then stopped cleanly.
    const first = await start(dir);
    const signup = await call(agent, first.url, "POST", "/v1/organization/signup", null, { name: "load" });
    const key = signup.api_key;
    await call(agent, first.url, "PATCH", "/v1/organization", key, { model_api_keys: { anthropic: providerKey("anthropic") } });
    const instance = await call(agent, first.url, "POST", "/v1/instances", key, { name: "busy" });
    await call(agent, first.url, "GET", `/v1/instances/${instance.id}`, key);
    expect(await stopCli(first, "SIGTERM")).toBe(0);

    // More than 10 MB of stored conversation, written as a state.json holds it (every version reads this).
    const file = join(dir, "state.json");
    const state = JSON.parse(readFileSync(file, "utf8"));
    const responses: Record<string, unknown> = {};
    const text = "x".repeat(1000);
    for (let i = 0; i < 5200; i++) {
      const id = `resp_${i.toString(16).padStart(32, "0")}`;
      responses[id] = {
        id,
        instance_id: instance.id,
        session: `seed-${i % 50}`,
        parent_id: null,
        input_text: text,
        output_text: text,
        model: "m",
        created_at: 1_700_000_000,
      };
    }
    state.gateway = { responses, heads: {} };
    writeFileSync(file, JSON.stringify(state));
    expect(statSync(file).size).toBeGreaterThan(10 * 1024 * 1024);

    const second = await start(dir);
    const answered: { kind: "key" | "turn"; id: string; at: number }[] = [];
    let stop = false;
    let n = 0;
    // Kill mid-load once enough writes were answered (an event, not a sleep).
    let enough!: () => void;
    const loaded = new Promise<void>((resolve) => (enough = resolve));
    const done = (entry: (typeof answered)[number]) => {
      answered.push(entry);
      // 300 answered writes: at the ~150-300 fsynced writes a second this machine does, well over 100 of
      // them are older than flushMs + 50 ms at the kill (checked below); twice as many only cost seconds.
      if (answered.length === 300) enough();
    };
    const worker = async (w: number) => {
      while (!stop) {
        const i = n++;
        try {
          if (w % 2 === 0) {
            const created = await call(agent, second.url, "POST", "/v1/keys", key, { name: `k${i}`, instance_ids: [instance.id], permissions: ["read"] });
            done({ kind: "key", id: created.id, at: performance.now() });
          } else {
            const turn = await call(agent, second.url, "POST", `/v1/instances/${instance.id}/session/w${w}/responses`, key, { model: "m", input: `turn ${i}` });
            done({ kind: "turn", id: turn.id, at: performance.now() });
          }
        } catch {
          return; // the process is gone
        }
      }
    };
    const workers = Array.from({ length: 12 }, (_, w) => worker(w));
    await loaded;
    const killedAt = performance.now();
    second.child.kill("SIGKILL");
    stop = true;
    await second.exited;
    await Promise.all(workers);

    const third = await start(dir);
    const snapshot = await call(agent, third.url, "GET", "/_emulator/snapshot", null);
    const due = answered.filter((w) => w.at < killedAt - (FLUSH_MS + 50));
    expect(due.length).toBeGreaterThan(100);
    const lost = (w: (typeof answered)[number]) => (w.kind === "key" ? !snapshot.keys[w.id] : !snapshot.gateway.responses[w.id]);
    const show = (w: (typeof answered)[number]) => `${w.kind} ${w.id} answered ${(killedAt - w.at).toFixed(0)} ms before the kill`;
    // What the issue asks: nothing answered more than flushMs + 50 ms before the kill is lost...
    expect(due.filter(lost).map(show)).toEqual([]);
    // ...and what the README promises: a write is answered only once it is on disk, so nothing answered is lost.
    expect(answered.filter(lost).map(show)).toEqual([]);
    // The seeded conversation is all there too.
    expect(Object.keys(snapshot.gateway.responses).length).toBeGreaterThanOrEqual(5200);
  });
});
