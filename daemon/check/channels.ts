/**
 * Checks each enabled channel against its platform, through the platform's
 * own `check` probe (registry.ts): Telegram's `getMe` and Discord's
 * `GET /users/@me` say whether the token is accepted (at the channel's own
 * apiRoot/api); a WhatsApp channel is linked when its auth folder holds creds
 * naming the paired account. Tokens never appear in what is reported.
 */
import type { ChannelCheckDeps } from "../adapters/platform.js";
import { platforms } from "../adapters/registry.js";
import type { DaemonConfig } from "../config/schema.js";
import type { CheckResult } from "../vocabulary/check-result.js";

export type { ChannelCheckDeps } from "../adapters/platform.js";

export async function checkChannels(config: DaemonConfig, deps: ChannelCheckDeps): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const channel of config.channels) {
    // The loader leaves disabled channels out; one built in code may still say so.
    if (!channel.enabled) continue;
    const result = platforms.map((p) => p.check(channel, deps)).find((r) => r !== undefined);
    if (result) results.push(await result);
  }
  return results;
}
