/**
 * Issue 8: does the emulator stay fast as conversations grow? In one run, on
 * a persistent data directory: `GET /v1/instances/{id}`, `PATCH
 * /v1/organization` and session responses beside a bare express handler,
 * then the same emulator after `BENCH_GROWTH` (default 100,000) stored
 * responses; then start-up time and memory of an emulator opening
 * `BENCH_MILLION` (default 1,000,000) stored responses, in a child process.
 *
 * Goals: p99 after growth within 1.5x of before; at 1,000,000 responses,
 * memory under 1 GiB and start-up under 10 s.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, readdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { Agent, request } from "undici";
import { createEmulator, type Emulator } from "../emulator/index.js";
import { record } from "../emulator/gateway/conversation.js";
import { createServiceClient } from "../shared/client/index.js";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const GROWTH = Number(process.env.BENCH_GROWTH ?? 100_000);
const MILLION = Number(process.env.BENCH_MILLION ?? 1_000_000);

interface Result {
  rps: number;
  p50: number;
  p99: number;
}

async function measure(call: () => Promise<void>): Promise<Result> {
  for (let i = 0; i < 100; i++) await call();
  let next = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) {
        const t = performance.now();
        await call();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!;
  return { rps: REQUESTS / seconds, p50: at(0.5), p99: at(0.99) };
}

const line = (name: string, r: Result, extra = "") =>
  console.log(`${name.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms${extra}`);

/** Stores `count` responses through the store's own append path (what `count` turns would leave). */
async function grow(emulator: Emulator, instanceId: string, count: number, offset = 0): Promise<void> {
  const state = emulator.store.data.gateway;
  const text = "a message of about the length people type into a chat, give or take";
  for (let i = 0; i < count; i++) {
    const id = `resp_${(offset + i).toString(16).padStart(32, "0")}`;
    const session = `grown-${i % 1000}`;
    const response = { id, instance_id: instanceId, session, parent_id: null, input_text: text, output_text: `You said: ${text}`, model: "m", created_at: 1_700_000_000 };
    record(state, response);
    emulator.store.recordResponse(response);
    if (i % 20_000 === 19_999) await emulator.store.flush();
  }
  await emulator.store.flush();
}

const dirSize = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? dirSize(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);

export async function storeGrowth(): Promise<void> {
  console.log(`\n== issue 8: store growth (${REQUESTS} requests, ${CONCURRENCY} at a time, persistent data directory) ==`);
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONCURRENCY });
  const baseline = express();
  baseline.get("/hello", (_req, res) => void res.json({ ok: true }));
  const server = baseline.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const bare = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hello`;
  const express0 = await measure(async () => void (await (await request(bare, { dispatcher: agent })).body.dump()));
  line("express baseline GET /hello", express0);

  const dir = mkdtempSync(join(tmpdir(), "agent-bridge-bench-"));
  try {
    const emulator = await createEmulator({ provisionMs: 0, dataDir: join(dir, "data") });
    const url = await emulator.listen();
    const anon = createServiceClient({ baseUrl: url, dispatcher: agent });
    const { api_key } = await anon.signup({ body: { name: "bench" } });
    const api = anon.withKey(api_key);
    await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
    const instance = await api.createInstance({ body: { name: "bench" } });
    let n = 0;
    const ops = {
      "GET /v1/instances/{id}": async () => void (await api.getInstance({ instance_id: instance.id })),
      "PATCH /v1/organization": async () => void (await api.updateOrganization({ body: { name: `bench-${n++}` } })),
      "POST session responses": async () => void (await api.createSessionResponse({ instance_id: instance.id, session_id: `s${n++ % 64}`, body: { model: "m", input: "hello" } })),
    };
    const before: Record<string, Result> = {};
    for (const [name, op] of Object.entries(ops)) line(`emulator ${name}`, (before[name] = await measure(op)), `   ${(before[name]!.p99 / express0.p99).toFixed(1)}x express p99`);

    const t = performance.now();
    await grow(emulator, instance.id, GROWTH);
    console.log(`\nstored ${GROWTH} more responses in ${((performance.now() - t) / 1000).toFixed(1)} s; data directory ${(dirSize(join(dir, "data")) / 1e6).toFixed(1)} MB, state.json ${(statSync(join(dir, "data", "state.json")).size / 1e3).toFixed(1)} kB`);
    const writesBefore = emulator.store.controlWrites;
    for (const [name, op] of Object.entries(ops)) {
      const after = await measure(op);
      const ratio = after.p99 / before[name]!.p99;
      line(`after growth ${name}`, after, `   ${ratio.toFixed(2)}x before ${ratio <= 1.5 ? "(goal <= 1.5x: met)" : "(goal <= 1.5x: MISSED)"}`);
    }
    console.log(`state.json rewrites during the after-growth run: ${emulator.store.controlWrites - writesBefore} (each ${(statSync(join(dir, "data", "state.json")).size / 1e3).toFixed(1)} kB; conversations are appended, never rewritten)`);

    // A million stored responses: start-up and memory of a fresh process opening them.
    await grow(emulator, instance.id, Math.max(0, MILLION - GROWTH - 6 * REQUESTS), GROWTH);
    await emulator.close();
    const child = spawnSync(process.execPath, ["--import", "tsx", new URL("./store-startup.ts", import.meta.url).pathname, join(dir, "data")], { encoding: "utf8" });
    const measured = /\{.*\}/.exec(child.stdout ?? "");
    if (!measured) console.log(`million start-up: the child failed: ${child.stderr}`);
    else {
      const m = JSON.parse(measured[0]) as { ms: number; rss: number; heap: number; count: number };
      const mib = m.rss / 2 ** 20;
      console.log(
        `start-up with ${m.count} stored responses (${(dirSize(join(dir, "data")) / 1e6).toFixed(0)} MB on disk): ${(m.ms / 1000).toFixed(1)} s ${m.ms < 10_000 ? "(goal < 10 s: met)" : "(goal < 10 s: MISSED)"}, ` +
          `memory ${mib.toFixed(0)} MiB rss ${mib < 1024 ? "(goal < 1 GiB: met)" : "(goal < 1 GiB: MISSED)"}`,
      );
    }
  } finally {
    server.close();
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
