/**
 * Child process of `store-growth.ts`: opens an emulator on the data directory
 * given as the first argument and prints, as one JSON line, how long that
 * took and the memory it holds (a fresh process, so nothing else counts).
 */
import { createEmulator } from "../emulator/index.js";

const started = performance.now();
const cpu = process.cpuUsage();
const emulator = await createEmulator({ dataDir: process.argv[2]! });
const ms = performance.now() - started;
// CPU time too: on a busy machine the wall time says more about the neighbours than about us.
const { user, system } = process.cpuUsage(cpu);
const { rss, heapUsed } = process.memoryUsage();
console.log(JSON.stringify({ ms, cpuMs: (user + system) / 1000, rss, heap: heapUsed, count: Object.keys(emulator.store.data.gateway.responses).length }));
await emulator.close();
