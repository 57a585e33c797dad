/**
 * `npm run bench`: throughput of the emulator's hot paths against a bare
 * express baseline on the same machine, over real HTTP with keep-alive.
 * Timing goals live here, not in tests. The relay's lines (bench/daemon.ts, and Slack's in
 * bench/slack.ts) and the first connections (bench/first-connections.ts) need the compiled
 * command (`npm run build`).
 * `BENCH_PARTS=http,daemon` runs only those parts.
 */
import express from "express";
import type { AddressInfo } from "node:net";
import { Agent, request } from "undici";
import { createEmulator } from "../emulator/index.js";
import { createServiceClient } from "../shared/client/index.js";
import { benchInstance, type LoadResult, runLoad } from "./load.js";
import { benchSandboxes } from "./sandboxes.js";
import { storeGrowth } from "./store-growth.js";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
/** Rounds of the GET comparison: the machine is shared, so the ratio is taken per round and the median reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Which parts run (comma-separated); default all: http, streaming, daemon, first, store, sandboxes. */
const PARTS = new Set((process.env.BENCH_PARTS ?? "http,streaming,daemon,slack,first,store,sandboxes,proxy").split(","));
const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONCURRENCY });

async function measure(name: string, call: () => Promise<void>): Promise<LoadResult & { cpuUs: number }> {
  const cpu = process.cpuUsage();
  const r = await runLoad(call, { requests: REQUESTS, concurrency: CONCURRENCY, warmUp: 200 });
  const used = process.cpuUsage(cpu);
  // CPU of this process (client and server both live here) per request, warm-up included.
  const us = (used.user + used.system) / (REQUESTS + 200);
  console.log(
    `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   CPU ${us.toFixed(0).padStart(4)} us/req`,
  );
  return { ...r, cpuUs: us };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A fixed JSON from a bare express app: the floor every HTTP line is compared with. */
async function listen(app: express.Express): Promise<{ url: string; close: () => void }> {
  const server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => void server.close() };
}

/**
 * What a user would run instead of the emulator for a turn: a stateless server answering
 * `POST /v1/responses` with an echo in the Responses shape (as a Prism mock or a ten-line
 * handler would), no conversation kept, no key checked, nothing recorded.
 */
function echoServer(): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(express.json());
  let n = 0;
  app.post("/v1/responses", (req, res) => {
    const input = typeof req.body?.input === "string" ? req.body.input : "";
    n++;
    res.json({
      id: `resp_${n}`,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status: "completed",
      model: String(req.body?.model ?? "m"),
      output: [
        {
          type: "message",
          id: `msg_${n}`,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: `You said: ${input}`, annotations: [] }],
        },
      ],
      usage: { input_tokens: 1, output_tokens: 3, total_tokens: 4 },
    });
  });
  return app;
}

async function benchHttp(): Promise<void> {
  console.log(`${REQUESTS} requests, ${CONCURRENCY} at a time\n`);
  const hello = express();
  hello.get("/hello", (_req, res) => void res.json({ ok: true }));
  const baseline = await listen(hello);
  const echo = await listen(echoServer());

  const emulator = await createEmulator({ provisionMs: 0 });
  const { url, anon, api, instance } = await benchInstance(emulator, agent);
  const key = await api.createKey({ body: { name: "bench", instance_ids: [instance.id], permissions: ["read", "interact"] } });
  const scoped = anon.withKey(key.raw_key);
  // The same GET inside a sandbox: its key puts every request in the sandbox's context and journal.
  const sandbox = await emulator.sandboxes.create();
  const inSandbox = createServiceClient({ baseUrl: url, dispatcher: agent, apiKey: sandbox.apiKey });
  await inSandbox.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const sandboxed = await inSandbox.createInstance({ body: { name: "bench" } });

  // Interleaved rounds: a neighbour's load moves both lines of a round alike.
  const ratios: number[] = [];
  const sandboxRatios: number[] = [];
  const cpuRatios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round}:`);
    const base = await measure("express baseline GET /hello", async () => {
      const res = await request(`${baseline.url}/hello`, { dispatcher: agent });
      await res.body.dump();
    });
    const get = await measure("emulator GET /v1/instances/{id}", async () => void (await scoped.getInstance({ instance_id: instance.id })));
    const inside = await measure("  ...in a sandbox", async () => void (await inSandbox.getInstance({ instance_id: sandboxed.id })));
    ratios.push(get.rps / base.rps);
    sandboxRatios.push(inside.rps / base.rps);
    cpuRatios.push(base.cpuUs / get.cpuUs);
  }
  console.log(
    `GET ratio to express (per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}): median ${median(ratios).toFixed(2)}x (goal >= 1.0x); in a sandbox ${median(sandboxRatios).toFixed(2)}x; by CPU per request (steadier on a busy machine) ${median(cpuRatios).toFixed(2)}x\n`,
  );

  let n = 0;
  const turn = await measure("emulator POST session responses", async () => {
    await scoped.createSessionResponse({ instance_id: instance.id, session_id: `s${n++ % 64}`, body: { model: "m", input: "hello" } });
  });
  const stateless = await measure("stateless echo POST /v1/responses", async () => {
    const res = await request(`${echo.url}/v1/responses`, {
      method: "POST",
      dispatcher: agent,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", input: "hello" }),
    });
    await res.body.dump();
  });
  // What the emulator's bookkeeping costs per turn over the echo a user might pick instead:
  // a keyed, sandboxed, journaled turn relayed over HTTP to the gateway that keeps the conversation.
  console.log(
    `a turn in memory: ${(1000 / turn.rps).toFixed(3)} ms of the run per turn vs ${(1000 / stateless.rps).toFixed(3)} ms for the stateless echo: ${(turn.rps / stateless.rps).toFixed(2)}x its throughput, +${(1000 / turn.rps - 1000 / stateless.rps).toFixed(3)} ms per turn\n`,
  );
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
  baseline.close();
  echo.close();
  await emulator.close();
}

async function main(): Promise<void> {
  if (PARTS.has("http")) await benchHttp();
  await agent.close();
  if (PARTS.has("streaming")) await (await import("./streaming.js")).benchStreaming();
  if (PARTS.has("daemon")) await (await import("./daemon.js")).benchDaemon();
  if (PARTS.has("slack")) await (await import("./slack.js")).benchSlack();
  if (PARTS.has("first")) await (await import("./first-connections.js")).benchFirstConnections();
  if (PARTS.has("store")) await storeGrowth();
  if (PARTS.has("sandboxes")) await benchSandboxes();
  if (PARTS.has("proxy")) await (await import("./proxy.js")).benchProxy();
}

await main();
