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
import { benchInstance, type LoadResult, runLoad } from "./load.js";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const GROWTH = Number(process.env.BENCH_GROWTH ?? 100_000);
const MILLION = Number(process.env.BENCH_MILLION ?? 1_000_000);

const measure = (call: () => Promise<void>): Promise<LoadResult> => runLoad(call, { requests: REQUESTS, concurrency: CONCURRENCY, warmUp: 100 });

const line = (name: string, r: LoadResult, extra = "") =>
  console.log(
    `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms${extra}`,
  );

/** Stores `count` responses through the store's own append path (what `count` turns would leave). */
async function grow(emulator: Emulator, instanceId: string, count: number, offset = 0): Promise<void> {
  const state = emulator.store.data.gateway;
  const text = "a message of about the length people type into a chat, give or take";
  for (let i = 0; i < count; i++) {
    const id = `resp_${(offset + i).toString(16).padStart(32, "0")}`;
    const session = `grown-${i % 1000}`;
    const response = {
      id,
      instance_id: instanceId,
      session,
      parent_id: null,
      input_text: text,
      output_text: `You said: ${text}`,
      model: "m",
      created_at: 1_700_000_000,
    };
    record(state, response);
    emulator.store.recordResponse(response);
    if (i % 20_000 === 19_999) await emulator.store.flush();
  }
  await emulator.store.flush();
}

const dirSize = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? dirSize(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);

interface Side {
  emulator: Emulator;
  dir: string;
  instanceId: string;
  ops: Record<string, () => Promise<void>>;
}

async function side(agent: Agent, dir: string): Promise<Side> {
  const emulator = await createEmulator({ provisionMs: 0, dataDir: dir });
  const { api, instance } = await benchInstance(emulator, agent);
  let n = 0;
  return {
    emulator,
    dir,
    instanceId: instance.id,
    ops: {
      "GET /v1/instances/{id}": async () => void (await api.getInstance({ instance_id: instance.id })),
      "PATCH /v1/organization": async () => void (await api.updateOrganization({ body: { name: `bench-${n++}` } })),
      "POST session responses": async () =>
        void (await api.createSessionResponse({ instance_id: instance.id, session_id: `s${n++ % 64}`, body: { model: "m", input: "hello" } })),
    },
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export async function storeGrowth(): Promise<void> {
  console.log(
    `\n== issue 8: store growth (${REQUESTS} requests, ${CONCURRENCY} at a time, persistent data directories, median of ${ROUNDS} interleaved rounds) ==`,
  );
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONCURRENCY * 2 });
  const baseline = express();
  baseline.get("/hello", (_req, res) => void res.json({ ok: true }));
  const server = baseline.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const bare = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hello`;
  const root = mkdtempSync(join(tmpdir(), "agent-bridge-bench-"));
  try {
    // The same emulator twice, one of them after growth; measured in alternation so a busy
    // neighbour (or the JIT warming up) weighs on both sides alike.
    const fresh = await side(agent, join(root, "fresh"));
    const grown = await side(agent, join(root, "grown"));
    const t = performance.now();
    await grow(grown.emulator, grown.instanceId, GROWTH);
    console.log(
      `stored ${GROWTH} responses in ${((performance.now() - t) / 1000).toFixed(1)} s: data directory ${(dirSize(grown.dir) / 1e6).toFixed(1)} MB, ` +
        `state.json ${(statSync(join(grown.dir, "state.json")).size / 1e3).toFixed(1)} kB (conversations are appended to their log, never rewritten)`,
    );
    const p99: Record<string, number[]> = { express: [] };
    const append = <T>(map: Record<string, T[]>, key: string, value: T) => {
      const list = map[key] ?? [];
      list.push(value);
      map[key] = list;
    };
    const results: Record<string, LoadResult[]> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const r = await measure(async () => void (await (await request(bare, { dispatcher: agent })).body.dump()));
      append(results, "express", r);
      p99.express!.push(r.p99);
      for (const name of Object.keys(fresh.ops)) {
        for (const [label, s] of [
          ["before", fresh],
          ["after", grown],
        ] as const) {
          const m = await measure(s.ops[name]!);
          append(results, `${label} ${name}`, m);
          append(p99, `${label} ${name}`, m.p99);
        }
      }
    }
    const show = (key: string, extra = "") => {
      const list = results[key]!;
      line(key, { rps: median(list.map((r) => r.rps)), p50: median(list.map((r) => r.p50)), p99: median(p99[key]!) }, extra);
    };
    show("express");
    for (const name of Object.keys(fresh.ops)) {
      const before = median(p99[`before ${name}`]!);
      const after = median(p99[`after ${name}`]!);
      show(`before ${name}`, `   ${(before / median(p99.express!)).toFixed(1)}x express`);
      show(
        `after ${name}`,
        `   ${(after / median(p99.express!)).toFixed(1)}x express, ${(after / before).toFixed(2)}x before ${after / before <= 1.5 ? "(goal <= 1.5x: met)" : "(goal <= 1.5x: MISSED)"}`,
      );
    }
    await fresh.emulator.close();

    // A million stored responses: start-up and memory of a fresh process opening them.
    await grow(grown.emulator, grown.instanceId, Math.max(0, MILLION - GROWTH), GROWTH);
    await grown.emulator.close();
    const child = spawnSync(process.execPath, ["--import", "tsx", new URL("./store-startup.ts", import.meta.url).pathname, grown.dir], { encoding: "utf8" });
    const measured = /\{.*\}/.exec(child.stdout ?? "");
    if (!measured) console.log(`million start-up: the child failed: ${child.stderr}`);
    else {
      const m = JSON.parse(measured[0]) as { ms: number; cpuMs: number; loadMs: number; loadCpuMs: number; rss: number; count: number };
      const mib = m.rss / 2 ** 20;
      const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
      console.log(`${m.count} stored responses (${(dirSize(grown.dir) / 1e6).toFixed(0)} MB on disk):`);
      console.log(
        `  start-up (listening; logs read on first use): ${s(m.ms)} wall, ${s(m.cpuMs)} CPU ${m.ms < 10_000 ? "(goal < 10 s: met)" : "(goal < 10 s: MISSED)"}`,
      );
      console.log(`  then reading every log (what a snapshot export does): ${s(m.loadMs)} wall, ${s(m.loadCpuMs)} CPU`);
      console.log(`  memory with all of them loaded: ${mib.toFixed(0)} MiB rss ${mib < 1024 ? "(goal < 1 GiB: met)" : "(goal < 1 GiB: MISSED)"}`);
    }
  } finally {
    server.close();
    await agent.close();
    rmSync(root, { recursive: true, force: true });
  }
}
