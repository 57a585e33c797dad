/**
 * `npm run daemon -- --config FILE`: the bridge as a long-running process,
 * against any service URL the config names. SIGINT/SIGTERM stop it
 * gracefully (exit 0). With only a terminal channel, end of input (Ctrl+D,
 * or a pipe closing) lets pending replies arrive and then stops it.
 */
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { ConfigError, loadConfig } from "./config/load.js";
import type { DaemonConfig } from "./config/schema.js";
import { createDaemon, type Daemon, type DaemonOptions } from "./daemon.js";
import { createLogger, type Logger } from "./ops/logger.js";
import { DataDirLockedError } from "./state/files.js";

const HELP = `Usage: npm run daemon -- --config FILE

Bridges chat platforms (Telegram, Discord, WhatsApp, the terminal) to agent
instances on the hosting service named in the config.

Options:
  -c, --config FILE   the daemon's JSON config (required); \${ENV_VAR} references
                      in it are read from the environment
  -h, --help          show this help

Signals: SIGINT/SIGTERM stop intake, let in-flight replies finish, save the
rest for the next start, and exit 0.
`;

/** Logs go to stderr when the terminal chat owns stdout. */
export function loggerFor(config: DaemonConfig): Logger {
  const terminal = config.channels.some((c) => c.enabled && c.type === "terminal");
  return createLogger({
    level: config.logLevel,
    destination: pino.destination({ dest: terminal ? 2 : 1, sync: true }),
    secrets: [config.service.apiKey, ...config.channels.flatMap((c) => ("token" in c ? [c.token] : []))],
  });
}

/**
 * Runs a daemon until a signal, or (terminal-only) until input ends and
 * every accepted message is answered. Resolves with the exit code.
 */
export function runInForeground(
  config: DaemonConfig,
  options: Omit<DaemonOptions, "config"> & { onStarted?(daemon: Daemon): void; beforeExit?(): Promise<void> } = {},
): Promise<number> {
  const logger = options.logger ?? loggerFor(config);
  const terminalOnly = config.channels.length > 0 && config.channels.every((c) => !c.enabled || c.type === "terminal");
  return new Promise<number>((resolve) => {
    let finishing: Promise<void> | undefined;
    const finish = (code: number, why: string) => {
      finishing ??= (async () => {
        logger.info({ why }, "shutting down");
        try {
          await daemon.stop();
        } catch (error) {
          logger.error({ err: error instanceof Error ? error.message : String(error) }, "shutdown failed");
          code = 1;
        }
        await options.beforeExit?.().catch(() => undefined);
        logger.flush();
        resolve(code);
      })();
    };
    const daemon = createDaemon({
      ...options,
      config,
      logger,
      onAdapterStatus(adapter, event) {
        options.onAdapterStatus?.(adapter, event);
        if (terminalOnly && adapter.platform === "terminal" && event.state === "stopped" && !finishing) {
          // Input ended: answer what was typed, then leave.
          void daemon.whenIdle().then(() => finish(0, "input closed"));
        }
      },
    });
    // `on`, not `once`: npm and tsx pass a Ctrl+C on to us as well, so it may come twice.
    process.on("SIGINT", () => finish(0, "SIGINT"));
    process.on("SIGTERM", () => finish(0, "SIGTERM"));
    daemon.start().then(
      () => options.onStarted?.(daemon),
      async (error: unknown) => {
        const message =
          error instanceof DataDirLockedError || error instanceof ConfigError
            ? error.message
            : `could not start: ${error instanceof Error ? error.message : String(error)}`;
        process.stderr.write(`daemon: ${message}\n`);
        await options.beforeExit?.().catch(() => undefined);
        resolve(1);
      },
    );
  });
}

async function main(argv: string[]): Promise<number> {
  let values: { config?: string; help?: boolean };
  try {
    values = parseArgs({
      args: argv,
      options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`daemon: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (!values.config) {
    process.stderr.write(`daemon: --config FILE is required\n\n${HELP}`);
    return 2;
  }
  let config: DaemonConfig;
  try {
    config = await loadConfig(values.config, process.env);
  } catch (error) {
    process.stderr.write(`daemon: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  if (config.routes.length === 0) {
    process.stderr.write("daemon: the config has no routes: no message could reach an agent. Add at least one to `routes`.\n");
    return 2;
  }
  return runInForeground(config);
}

const isMain = (() => {
  try {
    return !!process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
})();

if (isMain) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
