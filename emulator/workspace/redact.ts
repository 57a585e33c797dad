/**
 * Secrets (bot tokens, skill env values) are never kept in clear: the state
 * holds a short fingerprint, so a caller can tell which value is set without
 * the emulator being able to give it back; files on the instance hold only
 * the `REDACTED` marker.
 */
import { createHash } from "node:crypto";

/** What `runtime.json` and API answers show in place of a secret. */
export const REDACTED = "<redacted>";

/** `<redacted:1a2b3c4d5e6f>`: 48 bits of SHA-256, enough to tell values apart, not to recover one. */
export const fingerprint = (value: string): string => `<redacted:${createHash("sha256").update(value).digest("hex").slice(0, 12)}>`;

export const isRedacted = (value: string): boolean => value === REDACTED || /^<redacted:[0-9a-f]{12}>$/.test(value);

/** Field names that carry a secret wherever they appear (beyond a channel's own list). */
export const SECRET_NAME = /token|secret|password|passwd|key|credential|auth|cookie|session/i;
