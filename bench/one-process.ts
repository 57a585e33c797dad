/**
 * The emulator and a daemon in one process, as `agent-bridge start` runs them: the daemon
 * bench's `BENCH_ONE_PROCESS=1` line. Started by bench/daemon.ts over IPC: prints
 * `listening on URL` once the emulator listens; `{ start: configFile }` starts a daemon from
 * that config in this process, `{ stop: true }` stops it, and each is answered with
 * `{ done: true }`. Runs the compiled modules (`npm run build`), as the other lines do.
 */
import { createEmulator } from "../dist/emulator/index.js";
import { createDaemon, type Daemon } from "../dist/daemon/daemon.js";
import { loadConfig } from "../dist/daemon/config/load.js";
import { loggerFor } from "../dist/daemon/cli.js";

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
