/**
 * What the SDK is given so it keeps to the daemon's rules: a token cache on
 * the daemon's clock (the SDK fetches the tenant access token from
 * `auth/v3/tenant_access_token/internal` and keeps it until three minutes
 * before its `expire`, two hours; the cache also lets a token Feishu refused be
 * dropped), and a logger that never passes an object on: the SDK logs whole
 * HTTP errors, whose request holds the tenant token (and, for the token
 * request, the App Secret).
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";

/** The SDK's `Cache` (its types: `set(key, value, expire?, {namespace})`, `get(key, {namespace})`). */
export interface SdkCache {
  set(key: unknown, value: unknown, expire?: number, options?: { namespace?: string }): Promise<boolean>;
  get(key: unknown, options?: { namespace?: string }): Promise<unknown>;
}

/**
 * `expire` comes as an absolute wall-clock time (Date.now() + expire - 3 min):
 * it is turned into a lifetime at `set` and kept on `clock`, so a test's clock
 * can carry a token past its life.
 */
export function clockCache(clock: Clock, wallNow: () => number = Date.now): SdkCache & { clear(): void } {
  const entries = new Map<string, { value: unknown; until: number }>();
  // The SDK keys by a Symbol (its type says `string | Symbol`).
  const keyOf = (key: unknown, namespace?: string) => `${namespace ?? ""}\u0000${typeof key === "symbol" ? (key.description ?? "") : String(key)}`;
  return {
    async set(key, value, expire, options) {
      const life = expire === undefined ? Number.POSITIVE_INFINITY : expire - wallNow();
      entries.set(keyOf(key, options?.namespace), { value, until: clock.now() + life });
      return true;
    },
    async get(key, options) {
      const k = keyOf(key, options?.namespace);
      const entry = entries.get(k);
      if (!entry) return undefined;
      if (clock.now() >= entry.until) {
        entries.delete(k);
        return undefined;
      }
      return entry.value;
    },
    clear: () => entries.clear(),
  };
}

/** The SDK's `Logger`: strings only, each redacted; objects and errors by their message alone. */
export function sdkLogger(log: Logger, redact: (text: string) => string) {
  const line = (args: unknown[]): string =>
    redact(
      args
        .flat()
        .map((a) => (typeof a === "string" ? a : a instanceof Error ? a.message : typeof a === "number" ? String(a) : ""))
        .filter(Boolean)
        .join(" ")
        .replace(/Bearer\s+[A-Za-z0-9._-]+/g, "Bearer [redacted]")
        // The long connection's URL carries a short-lived ticket.
        .replace(/([?&](?:ticket|access_key)=)[^&\s]+/g, "$1[redacted]"),
    );
  // A line with nothing left in it (the SDK logged only an object) says nothing: dropped.
  const at =
    (level: "warn" | "debug" | "trace") =>
    (...args: unknown[]) => {
      const text = line(args);
      if (text) log[level]({ sdk: text }, "feishu sdk");
    };
  return { error: at("warn"), warn: at("warn"), info: at("debug"), debug: at("trace"), trace: at("trace") };
}
