/**
 * What the request log shows of a body: secrets replaced by `<redacted>`.
 * A field is secret by name (API keys, provider keys, channel credentials,
 * skill env values: everything under such a field goes); besides, any string
 * that looks like one of the service's raw keys or a bot token is cut out
 * wherever it appears, free text included.
 */
import { CHANNELS } from "../channels/catalog.js";
import { REDACTED, SECRET_NAME } from "../workspace/redact.js";

const SECRET_FIELD = /token|secret|password|passwd|api_?key|raw_key|^key$|credential|authorization|cookie|^env(_applied)?$/i;
const CHANNEL_SECRETS = new Set(
  CHANNELS.flatMap((c) =>
    Object.entries(c.fields)
      .filter(([, f]) => f.secret)
      .map(([name]) => name),
  ),
);
/** Raw service keys (`svc_org_`/`svc_sk_` + 64 hex) and Telegram-style bot tokens. */
const SECRET_TEXT = /svc_(?:org|sk)_[0-9a-f]+|\b\d{6,}:[A-Za-z0-9_-]{30,}\b|\bx(?:oxb|app)-[A-Za-z0-9-]{10,}/g;

/** Fields of the service's own answers whose names look key-like but hold no secret. */
const NOT_SECRET = new Set(["key_kind", "key_id", "key_prefix", "session", "session_id", "instance_ids"]);

/**
 * At least as wide as what the store never keeps in clear (`SECRET_NAME`: any
 * name with key, auth, session...), so a skill's `config: {stripe_key}` is
 * redacted here too.
 */
export const isSecretField = (name: string): boolean =>
  SECRET_FIELD.test(name) || CHANNEL_SECRETS.has(name) || (SECRET_NAME.test(name) && !NOT_SECRET.has(name));

export function redactText(text: string): string {
  return text.replace(SECRET_TEXT, REDACTED);
}

/** A copy of a parsed JSON value with every secret replaced; `inSecret` redacts every non-empty string leaf. */
export function redactJson(value: unknown, inSecret = false, depth = 0): unknown {
  if (depth > 32) return "…";
  if (typeof value === "string") return inSecret && value !== "" ? REDACTED : redactText(value);
  if (Array.isArray(value)) return value.map((item) => redactJson(item, inSecret, depth + 1));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactJson(v, inSecret || isSecretField(k), depth + 1);
    return out;
  }
  return value;
}
