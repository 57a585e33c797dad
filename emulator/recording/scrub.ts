/**
 * Keeping secrets out of recordings. A value is secret when it is one the
 * caller named (`--secret`, an environment variable's value), when it sits
 * under a field whose name says so (`api_key`, `bot_token`, ...; the rule the
 * request log uses), or when it is shaped like a key of this service, of a
 * model provider or of a chat platform, wherever it appears. A service key
 * becomes a key of the same shape made of zeros (so a replayed signup still
 * hands the client a key-shaped value); anything else becomes `<redacted>`.
 *
 * A streamed answer is scrubbed on its assembled text: the deltas of one
 * content part are joined, secrets are found in the whole, and each delta
 * loses its share of a secret, so a key split across two events is found.
 */
import { isSecretField } from "../events/redact.js";
import { REDACTED } from "../workspace/redact.js";

export interface SecretShape {
  /** What kind of secret, for reports (never the value). */
  kind: string;
  pattern: RegExp;
}

/** Key shapes, from the issuers' documented formats. Global regexes: use with `matchAll`/`replace`. */
export const SECRET_SHAPES: readonly SecretShape[] = [
  { kind: "service key", pattern: /svc_(?:org|sk)_[0-9a-f]{16,}/g },
  { kind: "Anthropic key", pattern: /sk-ant-[A-Za-z0-9_-]{20,}/g },
  { kind: "OpenAI key", pattern: /\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g },
  { kind: "Google API key", pattern: /\bAIza[0-9A-Za-z_-]{35}/g },
  { kind: "Telegram bot token", pattern: /\b\d{6,12}:[A-Za-z0-9_-]{30,}/g },
  { kind: "Discord bot token", pattern: /\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}/g },
  { kind: "Slack token", pattern: /\bx(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}/g },
  { kind: "GitHub token", pattern: /\bgh[pousr]_[A-Za-z0-9]{36,}/g },
  { kind: "AWS access key", pattern: /\bAKIA[0-9A-Z]{16}\b/g },
];

/** What a service key is replaced with: same prefix and length, all zeros (no real key is). */
const zeroKey = (key: string): string => key.replace(/^(svc_(?:org|sk)_)([0-9a-f]+)$/, (_, prefix: string, hex: string) => prefix + "0".repeat(hex.length));
const isPlaceholder = (text: string): boolean => /^svc_(?:org|sk)_0+$/.test(text);

export interface SecretFound {
  kind: string;
  start: number;
  end: number;
}

/** Every key-shaped span of `text` (placeholders left by scrubbing excluded), in order, not overlapping. */
export function findKeyShaped(text: string): SecretFound[] {
  const found: SecretFound[] = [];
  for (const { kind, pattern } of SECRET_SHAPES) {
    for (const m of text.matchAll(pattern)) {
      if (isPlaceholder(m[0])) continue;
      found.push({ kind, start: m.index, end: m.index + m[0].length });
    }
  }
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  return found.filter((f, i) => i === 0 || f.start >= found[i - 1]!.end);
}

export interface Scrubber {
  /** A string with every secret in it replaced. */
  text(value: string): string;
  /** A copy of a JSON value with every secret replaced (by field name too). */
  json(value: unknown): unknown;
  /**
   * Streamed events' data (parsed JSON), scrubbed as one text per content part:
   * the `delta`s of one part are joined before secrets are looked for.
   */
  events(data: readonly unknown[]): unknown[];
}

export interface ScrubberOptions {
  /** Values to remove wherever they appear (configured secrets); values shorter than 6 characters are ignored. */
  secrets?: readonly string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function createScrubber(options: ScrubberOptions = {}): Scrubber {
  const configured = [...new Set(options.secrets ?? [])].filter((s) => s.length >= 6).sort((a, b) => b.length - a.length);

  /** Spans to cut: configured values and key shapes. */
  const spans = (value: string): SecretFound[] => {
    const found = findKeyShaped(value);
    for (const secret of configured) {
      for (let at = value.indexOf(secret); at !== -1; at = value.indexOf(secret, at + secret.length)) {
        found.push({ kind: "configured secret", start: at, end: at + secret.length });
      }
    }
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    return found.filter((f, i) => i === 0 || f.start >= found[i - 1]!.end);
  };

  const text = (value: string): string => {
    let out = "";
    let last = 0;
    for (const span of spans(value)) {
      const secret = value.slice(span.start, span.end);
      out += value.slice(last, span.start) + (span.kind === "service key" ? zeroKey(secret) : REDACTED);
      last = span.end;
    }
    return out + value.slice(last);
  };

  const json = (value: unknown, inSecret = false, depth = 0): unknown => {
    if (depth > 64) return REDACTED;
    if (typeof value === "string") {
      if (!inSecret || value === "") return text(value);
      return /^svc_(?:org|sk)_[0-9a-f]+$/.test(value) ? zeroKey(value) : REDACTED;
    }
    if (Array.isArray(value)) return value.map((item) => json(item, inSecret, depth + 1));
    if (isRecord(value)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = json(v, inSecret || isSecretField(k), depth + 1);
      return out;
    }
    return value;
  };

  const events = (data: readonly unknown[]): unknown[] => {
    // Each content part's deltas, in order: [event index, delta text].
    const parts = new Map<string, [number, string][]>();
    data.forEach((event, i) => {
      if (!isRecord(event) || typeof event.delta !== "string") return;
      const key = `${String(event.type)}|${String(event.item_id)}|${String(event.output_index)}|${String(event.content_index)}`;
      const list = parts.get(key) ?? [];
      list.push([i, event.delta]);
      parts.set(key, list);
    });
    const deltas = new Map<number, string>();
    for (const list of parts.values()) {
      const whole = list.map(([, d]) => d).join("");
      const found = spans(whole);
      let offset = 0;
      for (const [index, delta] of list) {
        const start = offset;
        const end = offset + delta.length;
        offset = end;
        let out = "";
        let cursor = start;
        for (const span of found) {
          if (span.end <= start || span.start >= end) continue;
          out += whole.slice(cursor, Math.max(span.start, start));
          // The delta holding a secret's first character carries the replacement; the others lose their share.
          if (span.start >= start) out += span.kind === "service key" ? zeroKey(whole.slice(span.start, span.end)) : REDACTED;
          cursor = Math.min(span.end, end);
        }
        deltas.set(index, out + whole.slice(cursor, end));
      }
    }
    return data.map((event, i) => {
      const delta = deltas.get(i);
      const scrubbed = json(event);
      return delta !== undefined && isRecord(scrubbed) ? { ...scrubbed, delta } : scrubbed;
    });
  };

  return { text, json: (value) => json(value), events };
}
