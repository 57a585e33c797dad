/**
 * Structured logs (pino). Known secret-bearing fields are censored wherever
 * they sit (up to a few levels deep), and `secrets` given at creation are
 * scrubbed from every line written, wherever they appear in it.
 */
import { pino, type DestinationStream, type Level, type Logger } from "pino";

export type { Logger } from "pino";
export type LogLevel = Level | "silent";

const SECRET_KEYS = [
  "token",
  "botToken",
  "apiKey",
  "api_key",
  "authorization",
  "Authorization",
  "raw_key",
  "rawKey",
  "secretToken",
  "password",
  '["x-api-key"]',
  '["x-telegram-bot-api-secret-token"]',
];

/** Each key at the top level and up to three levels down. */
export const REDACT_PATHS = SECRET_KEYS.flatMap((k) => {
  const dot = k.startsWith("[") ? "" : ".";
  return [k, `*${dot}${k}`, `*.*${dot}${k}`, `*.*.*${dot}${k}`];
});

export const REDACTED = "[redacted]";

export interface LoggerOptions {
  level: LogLevel;
  /** Defaults to stdout. */
  destination?: DestinationStream;
  /** Values (API keys, bot tokens) to scrub from every line, in any field or message. */
  secrets?: string[];
  /** Base bindings on every line; pino's default is pid and hostname. */
  base?: Record<string, unknown> | null;
}

export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? pino.destination({ dest: 1, sync: false });
  const secrets = (options.secrets ?? []).filter((s) => s.length >= MIN_SECRET_LENGTH);
  const stream: DestinationStream =
    secrets.length === 0 ? destination : { write: (line: string) => destination.write(redactSecrets(line, secrets)) };
  return pino(
    {
      level: options.level,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      ...(options.base !== undefined ? { base: options.base } : {}),
    },
    stream,
  );
}

/** Shorter strings would match ordinary text: nothing that short is a real secret. */
const MIN_SECRET_LENGTH = 6;

/**
 * Replaces every occurrence of each secret (also URL-encoded and
 * JSON-escaped) with `[redacted]`. Secrets shorter than 6 characters are
 * left alone, since they would mangle ordinary text.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    forms.add(s);
    forms.add(encodeURIComponent(s));
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  // Longest first, so a secret containing another is replaced whole.
  let out = text;
  for (const form of [...forms].sort((a, b) => b.length - a.length)) out = out.split(form).join(REDACTED);
  return out;
}
