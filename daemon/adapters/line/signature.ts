/**
 * LINE signs every webhook request: `X-Line-Signature` is the base64 of the
 * HMAC-SHA256 of the raw request body with the channel secret
 * (developers.line.biz, "Verify webhook signature"). Checked over the bytes
 * as they came, before anything is parsed; compared in constant time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export type SignatureVerdict = { ok: true } | { ok: false; reason: "missing signature" | "bad signature" };

export const lineSignature = (rawBody: Buffer | string, channelSecret: string): string => createHmac("sha256", channelSecret).update(rawBody).digest("base64");

export function verifyLineSignature(rawBody: Buffer, signature: string | undefined, channelSecret: string): SignatureVerdict {
  if (!signature) return { ok: false, reason: "missing signature" };
  const expected = Buffer.from(lineSignature(rawBody, channelSecret), "utf8");
  const given = Buffer.from(signature, "utf8");
  return expected.length === given.length && timingSafeEqual(expected, given) ? { ok: true } : { ok: false, reason: "bad signature" };
}
