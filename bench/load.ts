/**
 * One closed-loop load: `concurrency` callers each repeat `call` until
 * `requests` calls were made in all, after `warmUp` calls one at a time.
 * Latencies are per call; throughput is over the whole run.
 */
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
