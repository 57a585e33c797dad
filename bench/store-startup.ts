/**
 * Child process of `store-growth.ts`: opens an emulator on the data directory
 * given as the first argument, then reads every conversation, and prints as
 * one JSON line how long each took and the memory then held (a fresh
 * process, so nothing else counts).
 */
import { createEmulator } from "../emulator/index.js";

const started = performance.now();
const cpu = process.cpuUsage();
const emulator = await createEmulator({ dataDir: process.argv[2]! });
const ms = performance.now() - started;
// CPU time too: on a busy machine the wall time says more about the neighbours than about us.
const { user, system } = process.cpuUsage(cpu);
// Logs are read on first use: then every one of them, as a snapshot export would.
const loading = performance.now();
const cpu2 = process.cpuUsage();
await emulator.store.allConversations();
const loadMs = performance.now() - loading;
const loadCpu = process.cpuUsage(cpu2);
const { rss, heapUsed } = process.memoryUsage();
console.log(
  JSON.stringify({
    ms,
    cpuMs: (user + system) / 1000,
    loadMs,
    loadCpuMs: (loadCpu.user + loadCpu.system) / 1000,
    rss,
    heap: heapUsed,
    count: Object.keys(emulator.store.data.gateway.responses).length,
  }),
);
await emulator.close();
