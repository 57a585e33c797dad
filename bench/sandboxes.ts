/**
 * Issue 17: sandboxes. Prints sandbox create + remove (p50, p99, in-process),
 * the other sandboxes' p99 before and while a sandbox holding 100 instances
 * and 10,000 stored responses is removed, memory per idle sandbox, and a
 * write's p99 with 10 and with 10,000 organizations stored (persistent data
 * directory).
 *
 * Goals: create + remove p50 under 5 ms; others' p99 within 1.5x during the
 * removal; write p99 at 10,000 organizations within 1.5x of that at 10.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { createEmulator, type Emulator } from "../emulator/index.js";
import { record } from "../emulator/gateway/conversation.js";
import { hex, uuid } from "../shared/random.js";
import { runLoad } from "./load.js";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONCURRENCY });

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const ms = (n: number) => `${n.toFixed(2)} ms`;

async function call(url: string, key: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await request(`${url}${path}`, {
    method: method as "GET",
    dispatcher: agent,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 400) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** A sandbox with a provider key, a large plan and `instances` instances. */
async function filledSandbox(emulator: Emulator, url: string, instances: number) {
  const sandbox = await emulator.sandboxes.create();
  await call(url, sandbox.apiKey, "PATCH", "/v1/organization", { model_api_keys: { anthropic: "bench" } });
  emulator.store.data.organizations[sandbox.organizationId]!.tier = "lobster";
  const ids: string[] = [];
  for (let i = 0; i < instances; i++) ids.push((await call(url, sandbox.apiKey, "POST", "/v1/instances", { name: `i${i}` })).id as string);
  return { sandbox, ids };
}

async function createRemove(emulator: Emulator): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    const sandbox = await emulator.sandboxes.create();
    await sandbox.remove();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`sandbox create + remove (in-process, 2000)       p50 ${ms(percentile(times, 0.5))}   p99 ${ms(percentile(times, 0.99))}   (goal p50 < 5 ms)`);
}

async function removalUnderLoad(emulator: Emulator, url: string): Promise<void> {
  const others = await Promise.all(Array.from({ length: 4 }, () => filledSandbox(emulator, url, 1)));
  let n = 0;
  const load = () => {
    const other = others[n++ % others.length]!;
    return call(url, other.sandbox.apiKey, "GET", `/v1/instances/${other.ids[0]}`).then(() => {});
  };
  const before = await runLoad(load, { requests: REQUESTS, concurrency: CONCURRENCY, warmUp: 100 });

  const big = await filledSandbox(emulator, url, 100);
  const text = "a message of about the length people type into a chat, give or take";
  for (let i = 0; i < 10_000; i++) {
    const response = {
      id: `resp_${i.toString(16).padStart(32, "0")}`,
      instance_id: big.ids[i % 100]!,
      session: `s${i % 50}`,
      parent_id: null,
      input_text: text,
      output_text: text,
      model: "m",
      created_at: 1_700_000_000,
    };
    record(emulator.store.data.gateway, response);
  }
  let removalMs = 0;
  const removing = (async () => {
    // Once the load is under way.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const t = performance.now();
    await big.sandbox.remove();
    removalMs = performance.now() - t;
  })();
  const during = await runLoad(load, { requests: REQUESTS, concurrency: CONCURRENCY, warmUp: 0 });
  await removing;
  console.log(
    `others' p99 before / during removing a sandbox of 100 instances + 10,000 responses   ${ms(before.p99)} / ${ms(during.p99)}   (removal ${ms(removalMs)}; goal within 1.5x)`,
  );
}

async function memoryPerSandbox(emulator: Emulator): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const made = [];
  for (let i = 0; i < 1000; i++) made.push(await emulator.sandboxes.create());
  gc?.();
  const after = process.memoryUsage().heapUsed;
  console.log(
    `memory per idle sandbox (1000 made)              ${((after - before) / 1000 / 1024).toFixed(1)} KiB${gc ? "" : " (no --expose-gc: includes garbage)"}`,
  );
  for (const sandbox of made) await sandbox.remove();
}

async function writeP99(organizations: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "agent-bridge-bench-sbx-"));
  const emulator = await createEmulator({ dataDir: dir, provisionMs: 0 });
  try {
    const url = await emulator.listen();
    // Stored as signups leave them, then written once (one durable write each would take minutes).
    const data = emulator.store.data;
    for (let i = 0; i < organizations - 1; i++) {
      const id = uuid(emulator.env.random);
      const at = new Date().toISOString();
      data.organizations[id] = { id, name: `org-${i}`, tier: "shrimp", provider_keys: {}, instance_ids: [], key_ids: [], created_at: at, updated_at: at };
      data.credentials[hex(emulator.env.random, 32)] = { kind: "org", organization_id: id };
    }
    emulator.store.commit();
    await emulator.store.flush();
    const sandbox = await emulator.sandboxes.create();
    let n = 0;
    const r = await runLoad(() => call(url, sandbox.apiKey, "PATCH", "/v1/organization", { name: `n${n++}` }).then(() => {}), {
      requests: 500,
      concurrency: 4,
      warmUp: 20,
    });
    return r.p99;
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchSandboxes(): Promise<void> {
  console.log("\nsandboxes");
  const emulator = await createEmulator({ provisionMs: 0 });
  const url = await emulator.listen();
  await createRemove(emulator);
  await removalUnderLoad(emulator, url);
  await memoryPerSandbox(emulator);
  await emulator.close();
  const small = await writeP99(10);
  const large = await writeP99(Number(process.env.BENCH_ORGANIZATIONS ?? 10_000));
  console.log(`write p99 (PATCH /v1/organization, on disk) with 10 / 10,000 organizations   ${ms(small)} / ${ms(large)}   (goal within 1.5x)`);
  await agent.close();
}

if (import.meta.url === `file://${process.argv[1]}`) void benchSandboxes();
