/**
 * The emulator and a daemon in one process, as `agent-bridge start` runs them: the daemon
 * bench's `BENCH_ONE_PROCESS=1` line. Started by bench/daemon.ts over IPC: prints
 * `listening on URL` once the emulator listens; `{ start: configFile }` starts a daemon from
 * that config in this process, `{ stop: true }` stops it, and each is answered with
 * `{ done: true }`. Runs the compiled modules (`npm run build`), as the other lines do;
 * `BENCH_ONE_PROCESS_DIST` names another build's dist/ instead.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Daemon } from "../daemon/daemon.js";

// BENCH_ONE_PROCESS_DIST: another build's dist/ (a same-machine before/after); default this checkout's.
const dist = process.env.BENCH_ONE_PROCESS_DIST ?? join(import.meta.dirname, "..", "dist");
const from = (path: string) => pathToFileURL(join(dist, path)).href;
const { createEmulator } = (await import(from("emulator/index.js"))) as typeof import("../emulator/index.js");
const { createDaemon } = (await import(from("daemon/daemon.js"))) as typeof import("../daemon/daemon.js");
const { loadConfig } = (await import(from("daemon/config/load.js"))) as typeof import("../daemon/config/load.js");
const { loggerFor } = (await import(from("daemon/cli.js"))) as typeof import("../daemon/cli.js");

type Message = { start: string } | { stop: true };

const emulator = await createEmulator({ inMemory: true, provisionMs: 0 });
const url = await emulator.listen(0, "127.0.0.1");
console.log(`listening on ${url}`);
let daemon: Daemon | undefined;
process.on("message", (message: Message) => {
  void (async () => {
    if ("start" in message) {
      const config = await loadConfig(message.start);
      daemon = createDaemon({ config, logger: await loggerFor(config) });
      await daemon.start();
    } else {
      await daemon?.stop({ graceMs: 1000 });
      daemon = undefined;
    }
    process.send?.({ done: true });
  })();
});
process.on("SIGTERM", () => void emulator.close().then(() => process.exit(0)));
