/**
 * 200 chats x 10 turns straight to the emulator, each chat with a connection of its own
 * (an undici Agent of one connection, as separate processes would have): the latency of every
 * turn, the turns that waited a whole second or more (first turns apart), the emulator's CPU
 * over the run, and the kernel's TCP counters around it (`nstat`, machine-wide: dropped
 * handshakes, SYN and data retransmits, timeouts), to tell a timer's wait from work
 * (docs/architecture.md, "Whole-second waits: the gateway hop now in process").
 *
 * `BENCH_CHATS`, `BENCH_TURNS`; `BENCH_EACH_POOL=N`: the chats share one pool of N connections
 * instead (what a client can do: excess turns queue in the client, first in first out);
 * `BENCH_WARM=1`: one untimed turn per chat first, all at once (connections open, code warm).
 */
import { execFileSync } from "node:child_process";
import { Agent } from "undici";
import { createServiceClient } from "../shared/client/index.js";
import { cpuMs, startChild, stopChild } from "./daemon.js";

const CHATS = Number(process.env.BENCH_CHATS ?? 200);
const TURNS = Number(process.env.BENCH_TURNS ?? 10);
const COUNTERS = [
  "ListenOverflows",
  "ListenDrops",
  "TCPReqQFullDrop",
  "TCPReqQFullDoCookies",
  "TCPSynRetrans",
  "TCPTimeouts",
  "RetransSegs",
  "TCPLossProbes",
  "TCPTimeWaitOverflow",
  "TWRecycled",
  "PAWSEstab",
  "TCPChallengeACK",
  "TCPAbortOnData",
  "EmbryonicRsts",
  "OutRsts",
  "AttemptFails",
  "ActiveOpens",
  "PassiveOpens",
  "SyncookiesSent",
];

function counters(): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const line of execFileSync("nstat", ["-az"], { encoding: "utf8" }).split("\n")) {
      const [name, value] = line.trim().split(/\s+/);
      if (name && value) out.set(name.replace(/^(TcpExt|Tcp|Ip)/, ""), Number(value));
    }
  } catch {
    // no nstat: the counters print as "?"
  }
  return out;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

export async function benchConnectionEach(): Promise<void> {
  const emulator = await startChild(["emulator", "--port", "0", "--in-memory", "--provision-ms", "0"], /listening on (http:\/\/\S+)/);
  const baseUrl = emulator.match[1]!;
  const setup = createServiceClient({ baseUrl });
  const { api_key } = await setup.signup({ body: { name: "bench-each" } });
  const api = setup.withKey(api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const instance = await api.createInstance({ body: { name: "bench-each" } });
  let connects = 0;
  const pool = Number(process.env.BENCH_EACH_POOL ?? 0);
  const agent = () => new Agent({ keepAliveTimeout: 30_000, connections: pool || 1 }).on("connect", () => connects++);
  const shared = pool ? agent() : undefined;
  const chats = Array.from({ length: CHATS }, () => {
    const dispatcher = shared ?? agent();
    return { dispatcher, api: createServiceClient({ baseUrl, apiKey: api_key, dispatcher }) };
  });
  if (process.env.BENCH_WARM === "1")
    await Promise.all(
      chats.map(({ api }, chat) => api.createSessionResponse({ instance_id: instance.id, session_id: `each-${chat}`, body: { model: "m", input: "warm-up" } })),
    );
  const pid = emulator.child.pid;
  const connectsBefore = connects;
  const before = counters();
  const cpu0 = await cpuMs(pid);
  const turns: { chat: number; i: number; ms: number; start: number }[] = [];
  const t0 = performance.now();
  await Promise.all(
    chats.map(async ({ api }, chat) => {
      for (let i = 0; i < TURNS; i++) {
        const start = performance.now();
        await api.createSessionResponse({ instance_id: instance.id, session_id: `each-${chat}`, body: { model: "m", input: `hello ${i}` } });
        turns.push({ chat, i, ms: performance.now() - start, start: start - t0 });
      }
    }),
  );
  const after = counters();
  const cpu1 = await cpuMs(pid);
  const wall = performance.now() - t0;
  const sorted = turns.map((t) => t.ms).sort((a, b) => a - b);
  const slow = turns.filter((t) => t.ms >= 1000);
  const how = pool ? `one pool of ${pool} connections` : "a connection each";
  console.log(
    `${CHATS} chats x ${TURNS} turns, ${how}${process.env.BENCH_WARM === "1" ? " (warmed)" : ""}: p50 ${percentile(sorted, 0.5).toFixed(1)} ms, p99 ${percentile(sorted, 0.99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(0)} ms, turns >= 1 s: ${slow.length} (first turns among them: ${slow.filter((t) => t.i === 0).length}); connections opened ${connects - connectsBefore}`,
  );
  const firstEnd = Math.max(...turns.filter((t) => t.i === 0).map((t) => t.start + t.ms));
  console.log(
    `  emulator CPU: ${cpu0 === undefined || cpu1 === undefined ? "?" : (cpu1 - cpu0).toFixed(0)} ms over the run's ${wall.toFixed(0)} ms; the last first turn answered at ${firstEnd.toFixed(0)} ms`,
  );
  const first = turns
    .filter((t) => t.i === 0)
    .map((t) => t.ms)
    .sort((a, b) => a - b);
  console.log(`  first turns (sent at once): p50 ${percentile(first, 0.5).toFixed(0)} ms, max ${first.at(-1)!.toFixed(0)} ms`);
  const later = turns
    .filter((t) => t.i > 0)
    .map((t) => t.ms)
    .sort((a, b) => a - b);
  if (later.length)
    console.log(`  later turns: p50 ${percentile(later, 0.5).toFixed(1)} ms, p99 ${percentile(later, 0.99).toFixed(1)} ms, max ${later.at(-1)!.toFixed(0)} ms`);
  console.log(
    `  slow later turns (turn: started at ms, took ms): ${slow
      .filter((t) => t.i > 0)
      .slice(0, 30)
      .map((t) => `${t.i}: ${t.start.toFixed(0)}, ${t.ms.toFixed(0)}`)
      .join("; ")}`,
  );
  console.log(`  kernel counters during the run: ${COUNTERS.map((c) => `${c} ${before.has(c) ? (after.get(c) ?? 0) - before.get(c)! : "?"}`).join(", ")}`);
  await Promise.all((shared ? [shared] : chats.map((c) => c.dispatcher)).map((d) => d.close()));
  await stopChild(emulator.child);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchConnectionEach();
