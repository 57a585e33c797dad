/**
 * One closed-loop load: `concurrency` callers each repeat `call` until
 * `requests` calls were made in all, after `warmUp` calls one at a time.
 * Latencies are per call; throughput is over the whole run.
 */
import type { Agent } from "undici";
import type { Emulator } from "../emulator/index.js";
import { createServiceClient } from "../shared/client/index.js";

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
}

export async function runLoad(call: () => Promise<void>, options: { requests: number; concurrency: number; warmUp: number }): Promise<LoadResult> {
  for (let i = 0; i < options.warmUp; i++) await call();
  let next = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next++ < options.requests) {
        const t = performance.now();
        await call();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!;
  return { rps: options.requests / seconds, p50: at(0.5), p99: at(0.99) };
}

/**
 * An organization with a provider key and one running instance on `emulator` (made with
 * `provisionMs: 0`), reached through `agent`: what every bench line starts from.
 */
export async function benchInstance(emulator: Emulator, agent: Agent, name = "bench") {
  const url = await emulator.listen();
  const anon = createServiceClient({ baseUrl: url, dispatcher: agent });
  const { api_key } = await anon.signup({ body: { name } });
  const api = anon.withKey(api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const instance = await api.createInstance({ body: { name } });
  return { url, anon, api, apiKey: api_key, instance };
}
