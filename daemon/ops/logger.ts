/**
 * Structured logs (pino). Known secret-bearing fields are censored wherever
 * they sit (up to a few levels deep), and `secrets` given at creation are
 * scrubbed from every line written, wherever they appear in it. Lines are
 * JSON with ISO times; for people, `prettyDestination` (a terminal) or
 * `formatNotice` (the terminal chat) render them.
 */
import { pino, type DestinationStream, type Level, type Logger } from "pino";
import { secretHeaders } from "../adapters/registry.js";
import { MIN_SECRET_LENGTH, REDACTED, redactSecrets } from "../vocabulary/redact.js";

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
  // A platform's own (a webhook's secret header): its descriptor names them.
  ...secretHeaders.map((header) => `["${header}"]`),
];

/** Each key at the top level and up to three levels down. */
export const REDACT_PATHS = SECRET_KEYS.flatMap((k) => {
  const dot = k.startsWith("[") ? "" : ".";
  return [k, `*${dot}${k}`, `*.*${dot}${k}`, `*.*.*${dot}${k}`];
});

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
  const stream: DestinationStream = secrets.length === 0 ? destination : { write: (line: string) => destination.write(redactSecrets(line, secrets)) };
  return pino(
    {
      level: options.level,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      ...(options.base !== undefined ? { base: options.base } : {}),
    },
    stream,
  );
}

/**
 * pino-pretty on a file descriptor, for a person at a terminal: coloured,
 * local times, no pid/hostname. Loaded only when asked for.
 */
export async function prettyDestination(fd: 1 | 2): Promise<DestinationStream> {
  const { default: pretty } = await import("pino-pretty");
  return pretty({ colorize: true, destination: fd, sync: true, translateTime: "SYS:HH:MM:ss", ignore: "pid,hostname" });
}

const LEVEL_WORDS: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "warning", 50: "error", 60: "fatal" };
const NOTICE_MAX = 240;

/**
 * One log line as a short notice in the terminal chat's own style:
 * `(warning: adapter did not stop cleanly; platform: telegram)`.
 */
export function formatNotice(line: string): string {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return `(${line.trim()})`;
  }
  if (!entry || typeof entry !== "object") return `(${line.trim()})`;
  const { level, time: _time, pid: _pid, hostname: _host, msg, component: _component, ...rest } = entry as Record<string, unknown>;
  const word = typeof level === "number" ? (LEVEL_WORDS[level] ?? "log") : "log";
  const details = Object.entries(rest)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
  const text = `${word}: ${typeof msg === "string" ? msg : ""}${details ? `; ${details}` : ""}`;
  return `(${text.length > NOTICE_MAX ? `${text.slice(0, NOTICE_MAX - 1)}…` : text})`;
}
