/**
 * What a secret becomes wherever the daemon writes text: logs, error
 * messages, check output. The logger scrubs every line with it; adapters
 * scrub the errors their libraries raise (which may quote a URL with a token).
 */

export const REDACTED = "[redacted]";

/** Shorter strings would match ordinary text: nothing that short is a real secret. */
export const MIN_SECRET_LENGTH = 6;

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
