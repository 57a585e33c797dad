import { platforms } from "../adapters/registry.js";
import type { DaemonConfig } from "./schema.js";

/** Every secret in the config (API key, and what each channel's platform says it holds), so output can be scrubbed of them. */
export function secretsOf(config: DaemonConfig): string[] {
  const out = [config.service.apiKey, ...(config.ops.token ? [config.ops.token] : [])];
  if (config.state.kind === "postgres") out.push(...postgresSecrets(config.state.url));
  if (config.transcription?.kind === "openai" && config.transcription.apiKey) out.push(config.transcription.apiKey);
  for (const channel of config.channels) {
    for (const platform of platforms) out.push(...(platform.secrets(channel) ?? []));
    if (channel.transcription && channel.transcription.kind === "openai" && channel.transcription.apiKey) out.push(channel.transcription.apiKey);
  }
  return out;
}

/** A connection string's password (and the string itself, which holds it). */
function postgresSecrets(url: string): string[] {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password ? [url, password] : [];
  } catch {
    return [url];
  }
}
