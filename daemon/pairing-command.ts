/**
 * `agent-bridge pairing approve|list|revoke --config FILE`: what an owner
 * does from a shell. With the daemon running, the request goes to it through
 * the data directory (ops/control-requests.ts), so the approved person is
 * told at once; with no daemon, the command opens the state itself and the
 * approval waits there for the next start.
 */
import { pino } from "pino";
import { systemClock } from "../shared/clock.js";
import { DataDirLockedError } from "../shared/durable-files.js";
import { cryptoRandom } from "../shared/random.js";
import { ConfigError, loadConfig } from "./config/load.js";
import { createPairing, hashCode } from "./core/pairing.js";
import { createPairingOps } from "./core/pairing-ops.js";
import { type ControlResponse, type PairingRequest, sendControlRequest } from "./ops/control-requests.js";
import { answerPairingRequest } from "./ops/pairing-requests.js";
import { openStore } from "./state/store.js";

export type PairingCommand =
  | { op: "approve"; channel: string; code: string }
  | { op: "list"; channel?: string }
  | { op: "revoke"; channel: string; user: string };

export interface PairingCommandOptions {
  configFile: string;
  command: PairingCommand;
  env?: NodeJS.ProcessEnv;
  out?: (line: string) => void;
  err?: (line: string) => void;
  /** How long to wait for the running daemon's answer, ms (default 10000). */
  timeoutMs?: number;
}

/** Exit code 0 when done, 1 when refused (a wrong code, an unknown channel), 2 for a bad config. */
export async function runPairingCommand(options: PairingCommandOptions): Promise<number> {
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const err = options.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  let config: Awaited<ReturnType<typeof loadConfig>>;
  try {
    config = await loadConfig(options.configFile, options.env ?? process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const p of error.problems) err(`config ${options.configFile}: ${p}`);
    return 2;
  }
  const request = requestOf(options.command);
  const response = await answer(config, request, options.timeoutMs);
  if (response.ok) out(response.text);
  else err(response.error);
  return response.ok ? 0 : 1;
}

/** The request as it travels: a code only as its hash. */
function requestOf(command: PairingCommand): PairingRequest {
  switch (command.op) {
    case "approve":
      return { op: "pairing.approve", channel: command.channel, codeHash: hashCode(command.channel, command.code) };
    case "revoke":
      return { op: "pairing.revoke", channel: command.channel, user: command.user };
    case "list":
      return { op: "pairing.list", ...(command.channel !== undefined ? { channel: command.channel } : {}) };
  }
}

/** By the running daemon if there is one, else here against the state on disk. */
async function answer(config: Awaited<ReturnType<typeof loadConfig>>, request: PairingRequest, timeoutMs?: number): Promise<ControlResponse> {
  const toDaemon = async (): Promise<ControlResponse> => {
    try {
      return await sendControlRequest(config.dataDir, request, timeoutMs !== undefined ? { timeoutMs } : {});
    } catch (sendError) {
      const why = sendError instanceof Error ? sendError.message : String(sendError);
      // On several machines the approvals live in the database, written by the node that owns the channel.
      return config.state.kind === "postgres"
        ? { ok: false, error: `${why} With "state": {"kind": "postgres"}, run this on a machine where a daemon of this config runs.` }
        : { ok: false, error: why };
    }
  };
  if (config.state.kind === "postgres") return toDaemon();
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore({ dataDir: config.dataDir, clock: systemClock, random: cryptoRandom });
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    return toDaemon();
  }
  try {
    const logger = pino({ level: "silent" });
    const pairing = createPairing({ store, clock: systemClock, random: cryptoRandom, logger });
    const ops = createPairingOps({ pairing, channelFor: (id) => config.channels.find((c) => c.id === id), delivery: { notify: async () => {} }, logger });
    const response = await answerPairingRequest(ops, config.channels, request);
    return response.ok && request.op === "pairing.approve"
      ? { ok: true, text: `${response.text} (The daemon is not running: they are let in from its next start.)` }
      : response;
  } finally {
    await store.close();
  }
}
