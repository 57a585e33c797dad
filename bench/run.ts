/**
 * `npm run bench`: throughput of the emulator's hot paths against a bare
 * express baseline on the same machine, over real HTTP with keep-alive.
 * Timing goals live here, not in tests. The relay's line (bench/daemon.ts) needs the
 * compiled command (`npm run build`).
 */
import express from "express";
import type { AddressInfo } from "node:net";
import { Agent, request } from "undici";
import { createEmulator } from "../emulator/index.js";
import { benchInstance, runLoad } from "./load.js";
import { benchSandboxes } from "./sandboxes.js";
import { storeGrowth } from "./store-growth.js";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONCURRENCY });

async function measure(name: string, call: () => Promise<void>): Promise<void> {
  const r = await runLoad(call, { requests: REQUESTS, concurrency: CONCURRENCY, warmUp: 200 });
  console.log(`${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`);
}

async function main(): Promise<void> {
  console.log(`${REQUESTS} requests, ${CONCURRENCY} at a time\n`);

  const baseline = express();
  baseline.get("/hello", (_req, res) => void res.json({ ok: true }));
  const server = baseline.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await measure("express baseline GET /hello", async () => {
    const res = await request(`${baseUrl}/hello`, { dispatcher: agent });
    await res.body.dump();
  });
  server.close();

  const emulator = await createEmulator({ provisionMs: 0 });
  const { url, anon, api, instance } = await benchInstance(emulator, agent);
  const key = await api.createKey({ body: { name: "bench", instance_ids: [instance.id], permissions: ["read", "interact"] } });
  const scoped = anon.withKey(key.raw_key);

  await measure("emulator GET /v1/instances/{id}", async () => void (await scoped.getInstance({ instance_id: instance.id })));
  let n = 0;
  await measure("emulator POST session responses", async () => {
    await scoped.createSessionResponse({ instance_id: instance.id, session_id: `s${n++ % 64}`, body: { model: "m", input: "hello" } });
  });
  await measure("gateway direct POST /v1/responses", async () => {
    const res = await request(`${emulator.gateway.urlFor(instance.id)}/v1/responses`, {
      method: "POST",
      dispatcher: agent,
      headers: { "content-type": "application/json", "x-session-key": `d${n++ % 64}` },
      body: JSON.stringify({ model: "m", input: "hello" }),
    });
    await res.body.dump();
  });
  // The same load with a console watching: every request and turn also goes out on /_emulator/events.
  const watcher = await request(`${url}/_emulator/events`, { dispatcher: new Agent() });
  let streamed = 0;
  watcher.body.on("data", (chunk: Buffer) => (streamed += chunk.length));
  await measure("  ...with an events client attached", async () => {
    await scoped.createSessionResponse({ instance_id: instance.id, session_id: `s${n++ % 64}`, body: { model: "m", input: "hello" } });
  });
  watcher.body.destroy();
  console.log(`events streamed to the watcher: ${(streamed / 1024).toFixed(0)} KiB`);
  console.log(`\nstore file writes during the run: ${emulator.store.writes} (in-memory store: 0 expected)`);
  await emulator.close();
  await agent.close();
  await (await import("./streaming.js")).benchStreaming();
  await (await import("./daemon.js")).benchDaemon();
  await (await import("./slack.js")).benchSlack();
}

void main()
  .then(storeGrowth)
  .then(() => benchSandboxes());
