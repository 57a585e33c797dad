/**
 * First connections: N clients that open their connections at the same moment (a suite's
 * workers starting together, a daemon's chats after a restart), each with a pool of its own,
 * as separate processes would have. Each sends one turn on its cold connection; the line gives
 * p50/p99/max of those first answers, how many waited a whole second or more, and how many
 * handshakes the kernel dropped meanwhile (`ListenOverflows` in /proc/net/netstat): a dropped
 * handshake is retried by the client's TCP after 1 s, then 3 s, which is what a whole-second
 * wait looks like (docs/architecture.md, "Performance").
 *
 * Then a raw burst: N sockets opened at once, one request each, no HTTP client in between.
 * Needs the compiled command (`npm run build`).
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { Agent } from "undici";
import { createServiceClient } from "../shared/client/index.js";

const ROOT = join(import.meta.dirname, "..");
const BIN = join(ROOT, "dist", "bin", "agent-bridge.js");

async function startEmulator(): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [BIN, "emulator", "--port", "0", "--in-memory", "--provision-ms", "0"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`emulator exited ${code}`)));
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return { url, stop };
}

/** Handshakes the kernel dropped because an accept queue was full, machine-wide (undefined without /proc). */
async function listenOverflows(): Promise<number | undefined> {
  try {
    const [names, values] = (await readFile("/proc/net/netstat", "utf8")).split("\n").filter((l) => l.startsWith("TcpExt:"));
    const at = names?.split(" ").indexOf("ListenOverflows") ?? -1;
    return at < 0 ? undefined : Number(values?.split(" ")[at]);
  } catch {
    return undefined;
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

function line(label: string, latencies: number[], dropped: number | undefined): string {
  latencies.sort((a, b) => a - b);
  const p50 = percentile(latencies, 0.5);
  const p99 = percentile(latencies, 0.99);
  const slow = latencies.filter((l) => l >= 1000).length;
  return `  ${label.padEnd(28)} p50 ${p50.toFixed(1).padStart(7)} ms   p99 ${p99.toFixed(1).padStart(7)} ms   max ${latencies.at(-1)!.toFixed(1).padStart(7)} ms   waits >= 1 s: ${slow}   handshakes dropped: ${dropped ?? "?"}`;
}

/** `n` raw sockets opened at once, each sending one GET and waiting for the whole answer. */
function rawBurst(url: string, path: string, n: number): Promise<number[]> {
  const { hostname, port } = new URL(url);
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<number>((resolve, reject) => {
          const t = performance.now();
          const socket = connect(Number(port), hostname, () => socket.end(`GET ${path} HTTP/1.1\r\nhost: ${hostname}\r\nconnection: close\r\n\r\n`));
          socket.resume();
          socket.on("error", reject);
          socket.on("close", () => resolve(performance.now() - t));
        }),
    ),
  );
}

export async function benchFirstConnections(counts = [200, 1000]): Promise<void> {
  console.log("\nfirst connections: N clients open at once, one turn each on a cold connection of its own");
  const emulator = await startEmulator();
  const setup = createServiceClient({ baseUrl: emulator.url });
  const { api_key } = await setup.signup({ body: { name: "bench-first" } });
  const api = setup.withKey(api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const instance = await api.createInstance({ body: { name: "bench-first" } });
  for (const n of counts) {
    const clients = Array.from({ length: n }, () => {
      const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 1 });
      return { dispatcher, api: createServiceClient({ baseUrl: emulator.url, apiKey: api_key, dispatcher }) };
    });
    const before = await listenOverflows();
    const latencies = await Promise.all(
      clients.map(async ({ api }, i) => {
        const t = performance.now();
        await api.createSessionResponse({ instance_id: instance.id, session_id: `first-${n}-${i}`, body: { model: "m", input: "hello" } });
        return performance.now() - t;
      }),
    );
    const after = await listenOverflows();
    console.log(line(`${n} clients, first turn`, latencies, before === undefined || after === undefined ? undefined : after - before));
    await Promise.all(clients.map((c) => c.dispatcher.close()));
  }
  for (const n of [1000, 2000]) {
    const before = await listenOverflows();
    const latencies = await rawBurst(emulator.url, "/_emulator/health", n);
    const after = await listenOverflows();
    console.log(line(`${n} raw sockets, one GET`, latencies, before === undefined || after === undefined ? undefined : after - before));
  }
  await emulator.stop();
}

if (import.meta.url === `file://${process.argv[1]}`) await benchFirstConnections();
