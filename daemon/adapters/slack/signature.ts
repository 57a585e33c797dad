/**
 * Slack's request signing (Events API over HTTP), pure: `v0=` + hex
 * HMAC-SHA256 with the signing secret over `v0:{timestamp}:{raw body}`,
 * computed over the raw bytes as received (never re-serialised JSON),
 * compared in constant time, and refused when the timestamp is more than
 * five minutes from now (a recorded request cannot be replayed later).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** Slack's replay window: five minutes either way. */
export const SIGNATURE_WINDOW_MS = 5 * 60 * 1000;

export type SignatureVerdict = { ok: true } | { ok: false; reason: "missing headers" | "stale timestamp" | "bad signature" };

export interface SignedRequest {
  /** `X-Slack-Request-Timestamp`: seconds since the epoch. */
  timestamp: string | undefined;
  /** `X-Slack-Signature`: `v0=<hex>`. */
  signature: string | undefined;
  rawBody: Buffer;
}

export function slackSignature(signingSecret: string, timestamp: string, rawBody: Buffer): string {
  const hmac = createHmac("sha256", signingSecret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(rawBody);
  return `v0=${hmac.digest("hex")}`;
}

export function verifySlackRequest(request: SignedRequest, signingSecret: string, nowMs: number): SignatureVerdict {
  const { timestamp, signature } = request;
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: "missing headers" };
  if (Math.abs(nowMs - Number(timestamp) * 1000) > SIGNATURE_WINDOW_MS) return { ok: false, reason: "stale timestamp" };
  const expected = Buffer.from(slackSignature(signingSecret, timestamp, request.rawBody));
  const given = Buffer.from(signature);
  // Lengths are public (always "v0=" + 64 hex); only equal-length buffers can be compared in constant time.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "bad signature" };
  return { ok: true };
}
