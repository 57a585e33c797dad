/**
 * `agent-bridge check --config FILE`: loads the config (its problems are the
 * first failure), runs every check, prints one line each, and exits 1 when
 * any failed.
 */
import { ConfigError, loadConfig } from "../config/load.js";
import { redactSecrets } from "../vocabulary/redact.js";
import { secretsOf } from "../config/secrets.js";
import { formatResult, runChecks, type CheckDeps } from "./index.js";
import { configHash } from "../config/reload.js";

export interface CheckCommandOptions extends CheckDeps {
  configFile: string;
  env?: NodeJS.ProcessEnv;
  out?: (line: string) => void;
  /** Only the file: what a reload checks (config/reload.ts); nothing is contacted. */
  offline?: boolean;
}

export async function runCheckCommand(opts: CheckCommandOptions): Promise<number> {
  const out = opts.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  let config: Awaited<ReturnType<typeof loadConfig>>;
  try {
    config = await loadConfig(opts.configFile, opts.env ?? process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    out(`FAIL  config ${opts.configFile}: ${error.problems.length === 1 ? "1 problem" : `${error.problems.length} problems`}`);
    for (const p of error.problems) out(`        ${p}`);
    return 1;
  }
  out(`ok    config ${opts.configFile}: valid`);
  if (opts.offline) {
    if (config.routes.length === 0) {
      out("FAIL  routes: none: no message could reach an agent; add at least one");
      return 1;
    }
    out(`ok    config hash ${configHash(config)} (offline: the service, the state and the channels were not contacted)`);
    return 0;
  }
  const results = await runChecks(config, opts);
  const secrets = secretsOf(config);
  for (const r of results) out(redactSecrets(formatResult(r), secrets));
  const failed = results.filter((r) => r.status === "fail").length;
  out(failed === 0 ? "All checks passed." : `${failed} check${failed === 1 ? "" : "s"} failed.`);
  return failed === 0 ? 0 : 1;
}
