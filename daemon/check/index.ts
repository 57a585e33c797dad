/**
 * `agent-bridge check`, as a function: the service and routes (service.ts),
 * then each channel (channels.ts). Dependencies are explicit so tests point
 * it at an emulator and platform fakes.
 */
import { readFile } from "node:fs/promises";
import type { DaemonConfig } from "../config/schema.js";
import { checkChannels, type ChannelCheckDeps } from "./channels.js";
import { undiciHttp } from "../helpers/probe.js";
import type { CheckResult } from "../vocabulary/check-result.js";
import { checkService } from "./service.js";
import { checkState, storedCredentials } from "./state.js";

export { checkChannels } from "./channels.js";
export { checkService } from "./service.js";
export { formatResult, type CheckResult, type CheckStatus } from "../vocabulary/check-result.js";

export interface CheckDeps extends Partial<ChannelCheckDeps> {}

export const defaultCheckDeps = (deps: CheckDeps = {}): ChannelCheckDeps => ({
  http: deps.http ?? undiciHttp,
  timeoutMs: deps.timeoutMs ?? 10_000,
  readFile: deps.readFile ?? ((path) => readFile(path, "utf8")),
});

export async function runChecks(config: DaemonConfig, deps: CheckDeps = {}): Promise<CheckResult[]> {
  const full = defaultCheckDeps(deps);
  // Several machines: credentials (WhatsApp's link) are records in the database, not files.
  const stored = config.state.kind === "postgres" ? storedCredentials(config.state, full.timeoutMs) : undefined;
  try {
    const channelDeps: ChannelCheckDeps = stored ? { ...full, storedCredential: (channel, type, id) => stored.read(channel, type, id) } : full;
    const [service, state, channels] = await Promise.all([checkService(config, full), checkState(config, full), checkChannels(config, channelDeps)]);
    return [...service, ...state, ...channels];
  } finally {
    await stored?.close();
  }
}
