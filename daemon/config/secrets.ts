import { platforms } from "../adapters/registry.js";
import type { DaemonConfig } from "./schema.js";

/** Every secret in the config (API key, and what each channel's platform says it holds), so output can be scrubbed of them. */
export function secretsOf(config: DaemonConfig): string[] {
  const out = [config.service.apiKey];
  for (const channel of config.channels) {
    for (const platform of platforms) out.push(...(platform.secrets(channel) ?? []));
  }
  return out;
}
