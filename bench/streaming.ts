/**
 * Streaming latency for `!stream 5` (5 s of deltas, ~600 characters): time to
 * the first text delta and to `response.completed`, measured by the client
 * from the moment the request is sent. The baseline is the fake gateway
 * itself (direct); each other path prints its overhead against it, measured
 * in the same run. Runs are concurrent (distinct sessions) so the whole line
 * takes about 5 s per path.
 */
import { Agent, request } from "undici";
import { createEmulator } from "../emulator/index.js";
import { readResponseStream } from "../shared/client/stream.js";
import { createServiceClient } from "../shared/client/index.js";

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
  const url = await emulator.listen();
  const anon = createServiceClient({ baseUrl: url, dispatcher: agent });
  const { api_key } = await anon.signup({ body: { name: "bench-stream" } });
  const api = anon.withKey(api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const instance = await api.createInstance({ body: { name: "bench-stream" } });
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
  // HOOK(through-daemon): add a StreamingPath here that sends `input` to the daemon through the
  // Telegram fake and times the first visible text (first sendMessage) and the final text (the
  // edit that equals the answer); the goal is first visible text within 0.3 s of the
  // gateway's first delta, median.
  const paths: StreamingPath[] = [direct, proxy];

  console.log(`\nstreaming: "${input}", ${RUNS} concurrent runs per path (ms from request sent)`);
  let baseline: { first: number; done: number } | undefined;
  for (const path of paths) {
    for (let i = 0; i < 2; i++) await path.run(`warm-${path.name}-${i}`).catch(() => undefined); // warm up
    const timings = await Promise.all(Array.from({ length: RUNS }, (_, i) => path.run(`${path.name.replace(/\W+/g, "-")}-${i}`)));
    const first = median(timings.map((t) => t.firstMs));
    const done = median(timings.map((t) => t.doneMs));
    baseline ??= { first, done };
    const vs = path === paths[0] ? "(baseline)" : `(+${(first - baseline.first).toFixed(1)} ms first, +${(done - baseline.done).toFixed(1)} ms done vs baseline)`;
    console.log(
      `${path.name.padEnd(34)} first delta p50 ${first.toFixed(1).padStart(7)} p90 ${p90(timings.map((t) => t.firstMs)).toFixed(1).padStart(7)}   ` +
        `completed p50 ${done.toFixed(1).padStart(8)} p90 ${p90(timings.map((t) => t.doneMs)).toFixed(1).padStart(8)}   ${vs}`,
    );
  }
  await emulator.close();
  await agent.close();
}
