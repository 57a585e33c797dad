/**
 * `agent-bridge reload --config FILE`: asks the daemon running with this
 * config's data directory to read its config file again, through the control
 * folder it already answers `pairing` requests on (ops/control-requests.ts),
 * and prints what came of it. The file is checked here first: one with
 * problems is not sent (the daemon would refuse it too).
 */
import { checkOffline } from "./config/reload.js";
import { sendControlRequest } from "./ops/control-requests.js";

export interface ReloadCommandOptions {
  configFile: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  out?: (line: string) => void;
  err?: (line: string) => void;
}

export async function runReloadCommand(options: ReloadCommandOptions): Promise<number> {
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const err = options.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  const checked = await checkOffline(options.configFile, options.env ?? process.env);
  if (!checked.ok) {
    err(`config ${options.configFile}: not reloaded, it has problems (the running config stays):`);
    for (const p of checked.problems) err(`  ${p}`);
    return 1;
  }
  try {
    const response = await sendControlRequest(
      checked.config.dataDir,
      { op: "config.reload" },
      options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {},
    );
    if (response.ok) out(response.text);
    else err(response.error);
    return response.ok ? 0 : 1;
  } catch (error) {
    err(error instanceof Error ? error.message : String(error));
    return 1;
  }
}
