/**
 * Streaming latency for `!stream 5` (5 s of deltas, ~600 characters): time to
 * the first text delta and to `response.completed`, measured by the client
 * from the moment the request is sent. The baseline is the fake gateway
 * itself (direct); each other path prints its overhead against it, measured
 * in the same run. Runs are concurrent (distinct sessions) so the whole line
 * takes about 5 s per path.
 */
import { Agent, request } from "undici";
import { benchInstance } from "./load.js";
import { createEmulator } from "../emulator/index.js";
import { readResponseStream } from "../shared/client/stream.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { createTerminalAdapter, REPLY_PREFIX } from "../daemon/adapters/terminal/index.js";
import type { TerminalChannelConfig } from "../daemon/adapters/terminal/config.js";
import { daemonConfigSchema } from "../daemon/config/schema.js";
import { createDaemon } from "../daemon/daemon.js";
import { streamText } from "../emulator/gateway/model.js";

const RUNS = Number(process.env.BENCH_STREAM_RUNS ?? 8);
const SECONDS = Number(process.env.BENCH_STREAM_SECONDS ?? 5);

interface Timing {
  firstMs: number;
  doneMs: number;
}

/** One way of getting a streamed reply; `run` resolves when the final text is there. */
export interface StreamingPath {
  name: string;
  run(session: string): Promise<Timing>;
}

/** Times a streamed SSE body: first `response.output_text.delta`, then `response.completed`. */
async function timeStream(started: number, body: AsyncIterable<Uint8Array> & { destroy?: () => unknown }): Promise<Timing> {
  let firstMs = Number.NaN;
  for await (const event of readResponseStream(body)) {
    if (event.type === "response.output_text.delta" && Number.isNaN(firstMs)) firstMs = performance.now() - started;
    if (event.type === "response.completed") return { firstMs, doneMs: performance.now() - started };
  }
  throw new Error("stream ended without response.completed");
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const p90 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.9))]!;
};

export async function benchStreaming(): Promise<void> {
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
  const emulator = await createEmulator({ provisionMs: 0 });
  const { url, apiKey: api_key, instance } = await benchInstance(emulator, agent, "bench-stream");
  const input = `!stream ${SECONDS}`;

  const direct: StreamingPath = {
    name: "gateway direct",
    async run(session) {
      const started = performance.now();
      const res = await request(`${emulator.gateway.urlFor(instance.id)}/v1/responses`, {
        method: "POST",
        dispatcher: agent,
        headers: { "content-type": "application/json", accept: "text/event-stream", "x-session-key": session },
        body: JSON.stringify({ model: "m", input, stream: true }),
      });
      return timeStream(started, res.body);
    },
  };
  const proxy: StreamingPath = {
    name: "through the emulator's proxy",
    async run(session) {
      const started = performance.now();
      const res = await request(`${url}/v1/instances/${instance.id}/session/${session}/responses`, {
        method: "POST",
        dispatcher: agent,
        headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${api_key}` },
        body: JSON.stringify({ model: "m", input, stream: true }),
      });
      if (res.statusCode !== 200) throw new Error(`proxy answered ${res.statusCode}: ${await res.body.text()}`);
      return timeStream(started, res.body);
    },
  };
  // Through the daemon: the person's line typed into a terminal chat, timed to the first reply text
  // the terminal shows and to the whole answer shown. Goal: first visible text within 0.3 s of the
  // gateway's own first delta, median.
  const daemon = await throughDaemon(url, api_key, instance.id, input);
  const paths: StreamingPath[] = [direct, proxy, daemon.path];

  console.log(`\nstreaming: "${input}", ${RUNS} concurrent runs per path (ms from request sent)`);
  let baseline: { first: number; done: number } | undefined;
  for (const path of paths) {
    for (let i = 0; i < 2; i++) await path.run(`warm-${path.name}-${i}`).catch(() => undefined); // warm up
    const timings = await Promise.all(Array.from({ length: RUNS }, (_, i) => path.run(`${path.name.replace(/\W+/g, "-")}-${i}`)));
    const first = median(timings.map((t) => t.firstMs));
    const done = median(timings.map((t) => t.doneMs));
    baseline ??= { first, done };
    const vs =
      path === paths[0] ? "(baseline)" : `(+${(first - baseline.first).toFixed(1)} ms first, +${(done - baseline.done).toFixed(1)} ms done vs baseline)`;
    console.log(
      `${path.name.padEnd(34)} first delta p50 ${first.toFixed(1).padStart(7)} p90 ${p90(timings.map((t) => t.firstMs))
        .toFixed(1)
        .padStart(7)}   ` +
        `completed p50 ${done.toFixed(1).padStart(8)} p90 ${p90(timings.map((t) => t.doneMs))
          .toFixed(1)
          .padStart(8)}   ${vs}`,
    );
    if (path === daemon.path) {
      const late = first - baseline.first;
      console.log(
        `  daemon: first visible text ${late.toFixed(1)} ms after the gateway's first delta (goal: within 300 ms, median) ${late <= 300 ? "ok" : "MISSED"}`,
      );
    }
  }
  await daemon.close();
  await emulator.close();
  await agent.close();
}

/**
 * A daemon with one terminal chat per concurrent run (each its own person and
 * session), streaming on (the default), in this process over real HTTP.
 */
async function throughDaemon(baseUrl: string, apiKey: string, instanceId: string, input: string): Promise<{ path: StreamingPath; close(): Promise<void> }> {
  const chats = RUNS + 2;
  const dataDir = await mkdtemp(join(tmpdir(), "bench-stream-daemon-"));
  const config = daemonConfigSchema.parse({
    service: { baseUrl, apiKey },
    dataDir,
    logLevel: "silent",
    ops: { port: null },
    queue: { debounceMs: 0, concurrencyPerInstance: chats },
    routes: [{ instance: instanceId }],
    channels: Array.from({ length: chats }, (_, i) => ({ type: "terminal", id: `t${i}`, userId: `u${i}` })),
  });
  const terminals = config.channels
    .filter((c): c is TerminalChannelConfig => c.type === "terminal")
    .map((channel) => {
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      let out = "";
      const listeners = new Set<() => void>();
      stdout.setEncoding("utf8").on("data", (c: string) => {
        out += c;
        for (const l of [...listeners]) l();
      });
      const adapter = createTerminalAdapter({ input: stdin, output: stdout, config: channel, terminal: false });
      return { adapter, stdin, out: () => out, listeners };
    });
  const daemon = createDaemon({ config, adapters: terminals.map((t) => t.adapter) });
  await daemon.start();
  const answer = streamText(600);
  let next = 0;
  const path: StreamingPath = {
    name: "through the daemon (terminal)",
    run() {
      const t = terminals[next++ % terminals.length]!;
      const from = t.out().length;
      const started = performance.now();
      return new Promise<Timing>((resolve) => {
        let firstMs = Number.NaN;
        const check = () => {
          const shown = t.out().slice(from);
          if (Number.isNaN(firstMs) && shown.includes(REPLY_PREFIX)) firstMs = performance.now() - started;
          if (shown.includes(`${REPLY_PREFIX}${answer}\n`)) {
            t.listeners.delete(check);
            resolve({ firstMs, doneMs: performance.now() - started });
          }
        };
        t.listeners.add(check);
        t.stdin.write(`${input}\n`);
      });
    },
  };
  return {
    path,
    async close() {
      await daemon.stop({ graceMs: 0 });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
