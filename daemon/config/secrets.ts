import type { DaemonConfig } from "./schema.js";

/** Every secret in the config (API key, bot tokens, webhook secret), so output can be scrubbed of them. */
export function secretsOf(config: DaemonConfig): string[] {
  const out = [config.service.apiKey];
  for (const ch of config.channels) {
    if (ch.type === "telegram" || ch.type === "discord") out.push(ch.token);
    if (ch.type === "telegram" && ch.webhook) out.push(ch.webhook.secretToken);
  }
  return out;
}
