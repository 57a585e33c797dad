/**
 * `agent-bridge run --config FILE` (`npm run daemon -- --config FILE`): the
 * bridge as a long-running process, against any service URL the config
 * names. Arguments are parsed by bin/program.ts.
 *
 * - SIGINT/SIGTERM stop it gracefully (exit 0): messages stop coming in, in-flight
 *   replies get the grace period, the rest stays journaled. A second SIGINT
 *   exits at once (130); what was accepted stays journaled for the next start.
 * - SIGHUP reads the config file again (so does a change to it with `watchConfig`):
 *   daemon.ts `reload`; a file with problems is refused and the running config stays.
 * - With only a terminal channel, end of input (Ctrl+D, or a pipe closing)
 *   lets pending replies arrive and then stops it.
 * - Logs: JSON lines, or pino-pretty when stdout is a terminal. With the
 *   terminal chat on a terminal, log lines become short notices above the
 *   prompt instead; piped, they are JSON on stderr.
 * - At start the service checks (daemon/check) run once beside the daemon,
 *   and each problem found is logged once, with what to fix.
 */
import { pino } from "pino";
import { ConfigError, loadConfig } from "./config/load.js";
import { checkOffline } from "./config/reload.js";
import { watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { DaemonConfig } from "./config/schema.js";
import { secretsOf } from "./config/secrets.js";
import { createDaemon, type Daemon, type DaemonOptions } from "./daemon.js";
import { createLogger, formatNotice, prettyDestination, type Logger } from "./ops/logger.js";
import { DataDirLockedError } from "../shared/durable-files.js";

/** Where the person reads short notices: the terminal chat once it runs, stderr before. */
export interface NoticeBoard {
  show(text: string): void;
  /** Set once the terminal chat can print above its prompt. */
  attach(show: (text: string) => void): void;
}

function noticeBoard(): NoticeBoard {
  let target: ((text: string) => void) | undefined;
  return {
    show: (text) => (target ? target(text) : process.stderr.write(`${text}\n`)),
    attach: (show) => (target = show),
  };
}

const hasTerminalChat = (config: DaemonConfig) => config.channels.some((c) => c.enabled && c.type === "terminal");

/**
 * The daemon's logger. Terminal chat on a TTY: notices in the chat.
 * Terminal chat piped: JSON on stderr (stdout is the chat). Otherwise
 * stdout: pretty on a TTY, JSON when redirected.
 */
export async function loggerFor(config: DaemonConfig, board?: NoticeBoard): Promise<Logger> {
  const secrets = secretsOf(config);
  const tty = process.stdout.isTTY === true;
  let destination: pino.DestinationStream;
  if (hasTerminalChat(config)) {
    destination = tty && board ? { write: (line: string) => board.show(formatNotice(line)) } : pino.destination({ dest: 2, sync: true });
  } else {
    destination = tty ? await prettyDestination(1) : pino.destination({ dest: 1, sync: true });
  }
  return createLogger({ level: config.logLevel, destination, secrets });
}

export interface ForegroundOptions extends Omit<DaemonOptions, "config"> {
  onStarted?(daemon: Daemon): void;
  beforeExit?(): Promise<void>;
  /** Run the service checks once the daemon is up and log what they find (default true). */
  startupCheck?: boolean;
  /** Where notices go (default: the terminal chat, or stderr). */
  board?: NoticeBoard;
  /** Where SIGINT/SIGTERM come from (default `process`). */
  signals?: Pick<NodeJS.EventEmitter, "on" | "off">;
  /** Wall clock in ms, for telling one Ctrl+C from two (default Date.now). */
  now?: () => number;
  /** The file the config came from: SIGHUP (and `watchConfig`) read it again. */
  configFile?: string;
  env?: NodeJS.ProcessEnv;
}

/** Two SIGINTs this close together are one Ctrl+C that npm passed on as well. */
const SAME_INTERRUPT_MS = 300;

/**
 * Runs a daemon until a signal, or (terminal-only) until input ends and
 * every accepted message is answered. Resolves with the exit code.
 */
export async function runInForeground(config: DaemonConfig, options: ForegroundOptions = {}): Promise<number> {
  const board = options.board ?? noticeBoard();
  const logger = options.logger ?? (await loggerFor(config, board));
  const graceMs = options.shutdownGraceMs ?? 10_000;
  const signals = options.signals ?? process;
  const now = options.now ?? Date.now;
  const terminalOnly = config.channels.length > 0 && config.channels.every((c) => !c.enabled || c.type === "terminal");
  return new Promise<number>((resolve) => {
    let finishing: Promise<void> | undefined;
    let done = false;
    let lastInterrupt = 0;
    const exit = (code: number) => {
      if (done) return;
      done = true;
      signals.off("SIGINT", onSigint);
      signals.off("SIGTERM", onSigterm);
      signals.off("SIGHUP", onSighup);
      watcher?.close();
      logger.flush();
      resolve(code);
    };
    const finish = (code: number, why: string) => {
      finishing ??= (async () => {
        logger.info({ why }, "shutting down");
        try {
          await daemon.stop({ graceMs });
        } catch (error) {
          logger.error({ err: error instanceof Error ? error.message : String(error) }, "shutdown failed");
          code = 1;
        }
        await options.beforeExit?.().catch(() => undefined);
        exit(code);
      })();
    };
    const onSigint = () => {
      const at = now();
      if (at - lastInterrupt < SAME_INTERRUPT_MS) return;
      lastInterrupt = at;
      if (!finishing) {
        const pending = Number(daemon.health().pending) || 0;
        board.show(
          pending > 0
            ? `(stopping: waiting up to ${Math.round(graceMs / 1000)} s for ${pending} ${pending === 1 ? "reply" : "replies"} in flight; Ctrl+C again quits now, and unanswered messages are answered at the next start)`
            : "(stopping…)",
        );
        finish(0, "SIGINT");
        return;
      }
      // Second Ctrl+C: leave now. Accepted turns are already journaled; the next start answers them.
      board.show("(quitting now: unanswered messages stay saved for the next start)");
      void daemon
        .stopNow()
        .catch(() => undefined)
        .then(() => options.beforeExit?.().catch(() => undefined))
        .then(() => exit(130));
    };
    const onSigterm = () => finish(0, "SIGTERM");
    const configFile = options.configFile;
    const reload = (why: string) => {
      logger.info({ why }, "reloading the config");
      void daemon.reload().catch((error: unknown) => logger.error({ err: error instanceof Error ? error.message : String(error) }, "config reload failed"));
    };
    const onSighup = () => reload("SIGHUP");
    let watcher: { close(): void } | undefined;
    const daemon = createDaemon({
      ...options,
      config,
      logger,
      ...(configFile ? { reloadFrom: () => checkOffline(configFile, options.env ?? process.env) } : {}),
      onAdapterStatus(adapter, event) {
        options.onAdapterStatus?.(adapter, event);
        if (terminalOnly && adapter.platform === "terminal" && event.state === "stopped" && !finishing) {
          // Input ended: answer what was typed, then leave.
          void daemon.whenIdle().then(() => finish(0, "input closed"));
        }
      },
    });
    signals.on("SIGINT", onSigint);
    signals.on("SIGTERM", onSigterm);
    signals.on("SIGHUP", onSighup);
    const started = daemon.start();
    // Watched from before the start, so a save the moment "daemon started" is logged is not missed; it applies once started.
    const reloadOnceStarted = () =>
      void started.then(
        () => reload("the file changed"),
        () => undefined,
      );
    if (configFile && config.watchConfig) watcher = watchConfigFile(configFile, reloadOnceStarted);
    started.then(
      () => {
        if (process.stdout.isTTY) {
          const chat = daemon.adapters.find((a) => a.platform === "terminal");
          if (chat && "notice" in chat && typeof chat.notice === "function") {
            const notice = chat.notice as (text: string) => void;
            board.attach((text) => notice.call(chat, text));
          }
        }
        if (options.startupCheck !== false) void startupCheck(config, logger);
        options.onStarted?.(daemon);
      },
      async (error: unknown) => {
        const message =
          error instanceof DataDirLockedError || error instanceof ConfigError
            ? error.message
            : `could not start: ${error instanceof Error ? error.message : String(error)}`;
        process.stderr.write(`daemon: ${message}\n`);
        await options.beforeExit?.().catch(() => undefined);
        exit(1);
      },
    );
  });
}

/**
 * Calls `changed` once a burst of writes to the config file is over (an editor writes, renames and
 * writes again). The folder is watched, so a file replaced by a rename is still seen.
 */
function watchConfigFile(file: string, changed: () => void): { close(): void } {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(dirname(file), (_event, changedName) => {
    if (changedName !== null && changedName !== name) return;
    clearTimeout(timer);
    timer = setTimeout(changed, 200);
  });
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

/** The service checks, once: each problem is one log line saying what to fix. */
async function startupCheck(config: DaemonConfig, logger: Logger): Promise<void> {
  try {
    const { checkService, defaultCheckDeps, formatResult } = await import("./check/index.js");
    const results = await checkService(config, defaultCheckDeps());
    for (const r of results) {
      if (r.status === "fail") logger.error({ check: r.subject }, `config check: ${formatResult(r).replace(/^FAIL\s+/, "")}`);
      else if (r.status === "warn") logger.warn({ check: r.subject }, `config check: ${formatResult(r).replace(/^warn\s+/, "")}`);
    }
    if (results.every((r) => r.status === "ok")) logger.info("config check: the service, the key and every routed instance are ready");
  } catch (error) {
    logger.warn({ err: error instanceof Error ? error.message : String(error) }, "config check could not run");
  }
}

export interface DaemonCommandOptions {
  configFile: string;
  /** Default true. */
  startupCheck?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** `agent-bridge run`: loads the config and runs the daemon in the foreground. Resolves with the exit code. */
export async function runDaemonCommand(opts: DaemonCommandOptions): Promise<number> {
  let config: DaemonConfig;
  try {
    config = await loadConfig(opts.configFile, opts.env ?? process.env);
  } catch (error) {
    process.stderr.write(`daemon: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  if (config.routes.length === 0) {
    process.stderr.write("daemon: the config has no routes: no message could reach an agent. Add at least one to `routes`.\n");
    return 2;
  }
  return runInForeground(config, { startupCheck: opts.startupCheck !== false, configFile: opts.configFile, ...(opts.env ? { env: opts.env } : {}) });
}
