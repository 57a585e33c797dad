/**
 * `npm run bench`: throughput of the emulator's hot paths against a bare
 * express baseline on the same machine, over real HTTP with keep-alive.
 * Timing goals live here, not in tests. The relay's lines (bench/daemon.ts, and Slack's in
 * bench/slack.ts) and the first connections (bench/first-connections.ts) need the compiled
 * command (`npm run build`).
 * `BENCH_PARTS=http,daemon` runs only those parts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { Agent, request } from "undici";
import { type LoadResult, runLoad } from "./load.js";
import type { BenchServers, ServersMessage } from "./servers.js";
import { benchSandboxes } from "./sandboxes.js";
import { storeGrowth } from "./store-growth.js";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
/** Rounds of the GET comparison: the machine is shared, so the ratio is taken per round and the median reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Which parts run (comma-separated); default all: http, streaming, daemon, slack, first, each, store, sandboxes, proxy. */
const PARTS = new Set((process.env.BENCH_PARTS ?? "http,streaming,daemon,slack,first,each,store,sandboxes,proxy").split(","));
const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONCURRENCY });

/** The servers' process (bench/servers.ts): its CPU time is what a line's "server CPU" counts. */
class ServersProcess {
  readonly #child: ChildProcess;
  /** Replies to the requests sent over IPC, in order (one request out at a time). */
  readonly #waiting: ((message: ServersMessage) => void)[] = [];

  constructor() {
    this.#child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "servers.ts")], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.#child.on("message", (message: ServersMessage) => this.#waiting.shift()?.(message));
  }

  #next(): Promise<ServersMessage> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  async ready(): Promise<BenchServers> {
    const message = await this.#next();
    if (!("ready" in message)) throw new Error("the bench's servers did not start");
    return message.ready;
  }

  async cpuMicros(): Promise<number> {
    const reply = this.#next();
    this.#child.send("cpu");
    const message = await reply;
    if (!("cpu" in message)) throw new Error("no CPU time from the bench's servers");
    return message.cpu.user + message.cpu.system;
  }

  async storeWrites(): Promise<number> {
    const reply = this.#next();
    this.#child.send("writes");
    const message = await reply;
    return "writes" in message ? message.writes : Number.NaN;
  }

  close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.#child.once("exit", () => resolve()));
    this.#child.send("close");
    return exited;
  }
}

/** One line: the load's throughput and latencies, and the servers' CPU per request (warm-up included). */
async function measure(servers: ServersProcess, name: string, call: () => Promise<void>): Promise<LoadResult & { cpuUs: number }> {
  const before = await servers.cpuMicros();
  const r = await runLoad(call, { requests: REQUESTS, concurrency: CONCURRENCY, warmUp: 200 });
  const us = ((await servers.cpuMicros()) - before) / (REQUESTS + 200);
  console.log(
    `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   server CPU ${us.toFixed(0).padStart(4)} us/req`,
  );
  return { ...r, cpuUs: us };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A request as wrk would send it: raw HTTP on a kept-alive connection, the body read and dropped, nothing parsed. */
async function hit(url: string, init: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: string } = {}): Promise<void> {
  const res = await request(url, { dispatcher: agent, ...init });
  await res.body.dump();
}

async function benchHttp(): Promise<void> {
  console.log(`${REQUESTS} requests, ${CONCURRENCY} at a time; the servers run in a process of their own (bench/servers.ts)\n`);
  const servers = new ServersProcess();
  const s = await servers.ready();
  const scoped = { authorization: `Bearer ${s.scopedKey}` };
  const sandboxed = { authorization: `Bearer ${s.sandboxKey}` };

  // Interleaved rounds: a neighbour's load moves both lines of a round alike.
  const ratios: number[] = [];
  const sandboxRatios: number[] = [];
  const cpuRatios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round}:`);
    const base = await measure(servers, "express baseline GET /hello", () => hit(`${s.hello}/hello`));
    const get = await measure(servers, "emulator GET /v1/instances/{id}", () => hit(`${s.emulator}/v1/instances/${s.instanceId}`, { headers: scoped }));
    const inside = await measure(servers, "  ...in a sandbox", () => hit(`${s.emulator}/v1/instances/${s.sandboxInstanceId}`, { headers: sandboxed }));
    ratios.push(get.rps / base.rps);
    sandboxRatios.push(inside.rps / base.rps);
    cpuRatios.push(base.cpuUs / get.cpuUs);
  }
  console.log(
    `GET ratio to express (per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}): median ${median(ratios).toFixed(2)}x (goal >= 1.0x); in a sandbox ${median(sandboxRatios).toFixed(2)}x; by server CPU per request (steadier on a busy machine) ${median(cpuRatios).toFixed(2)}x\n`,
  );

  let n = 0;
  const turnBody = JSON.stringify({ model: "m", input: "hello" });
  const json = { "content-type": "application/json" };
  const turn = await measure(servers, "emulator POST session responses", () =>
    hit(`${s.emulator}/v1/instances/${s.instanceId}/session/s${n++ % 64}/responses`, { method: "POST", headers: { ...scoped, ...json }, body: turnBody }),
  );
  const stateless = await measure(servers, "stateless echo POST /v1/responses", () =>
    hit(`${s.echo}/v1/responses`, { method: "POST", headers: json, body: turnBody }),
  );
  // What the emulator's bookkeeping costs per turn over the echo a user might pick instead:
  // a keyed, sandboxed, journaled turn relayed over HTTP to the gateway that keeps the conversation.
  console.log(
    `a turn in memory: ${(1000 / turn.rps).toFixed(3)} ms of the run per turn vs ${(1000 / stateless.rps).toFixed(3)} ms for the stateless echo: ${(turn.rps / stateless.rps).toFixed(2)}x its throughput, +${(1000 / turn.rps - 1000 / stateless.rps).toFixed(3)} ms per turn; server CPU ${turn.cpuUs.toFixed(0)} vs ${stateless.cpuUs.toFixed(0)} us\n`,
  );
  await measure(servers, "gateway direct POST /v1/responses", () =>
    hit(`${s.gateway}/v1/responses`, { method: "POST", headers: { ...json, "x-session-key": `d${n++ % 64}` }, body: turnBody }),
  );
  // The same load with a console watching: every request and turn also goes out on /_emulator/events.
  const watcher = await request(`${s.emulator}/_emulator/events`, { dispatcher: new Agent() });
  let streamed = 0;
  watcher.body.on("data", (chunk: Buffer) => (streamed += chunk.length));
  await measure(servers, "  ...with an events client attached", () =>
    hit(`${s.emulator}/v1/instances/${s.instanceId}/session/s${n++ % 64}/responses`, { method: "POST", headers: { ...scoped, ...json }, body: turnBody }),
  );
  watcher.body.destroy();
  console.log(`events streamed to the watcher: ${(streamed / 1024).toFixed(0)} KiB`);
  console.log(`\nstore file writes during the run: ${await servers.storeWrites()} (in-memory store: 0 expected)`);
  await servers.close();
}

async function main(): Promise<void> {
  if (PARTS.has("http")) await benchHttp();
  await agent.close();
  if (PARTS.has("streaming")) await (await import("./streaming.js")).benchStreaming();
  if (PARTS.has("daemon")) await (await import("./daemon.js")).benchDaemon();
  if (PARTS.has("slack")) await (await import("./slack.js")).benchSlack();
  if (PARTS.has("first")) await (await import("./first-connections.js")).benchFirstConnections();
  if (PARTS.has("each")) await (await import("./connection-each.js")).benchConnectionEach();
  if (PARTS.has("store")) await storeGrowth();
  if (PARTS.has("sandboxes")) await benchSandboxes();
  if (PARTS.has("proxy")) await (await import("./proxy.js")).benchProxy();
}

await main();
