/**
 * What Feishu documents for events posted to a Request URL ("Receive
 * events": security check and decryption), pure:
 * - the signature: `X-Lark-Signature` is the hex SHA-256 of
 *   `X-Lark-Request-Timestamp + X-Lark-Request-Nonce + encrypt_key + raw body`
 *   (no HMAC), sent on every event once an Encrypt Key is set (not on the
 *   URL verification);
 * - the encryption: the body is `{"encrypt": base64}`, AES-256-CBC with the
 *   key SHA-256(encrypt_key), the first 16 bytes of the decoded payload the
 *   IV, PKCS#7 padding.
 */
import { createDecipheriv, createHash, timingSafeEqual } from "node:crypto";

export interface SignedRequest {
  timestamp: string | undefined;
  nonce: string | undefined;
  signature: string | undefined;
  rawBody: Buffer;
}

export type SignatureVerdict = { ok: true } | { ok: false; reason: "unsigned" | "bad signature" };

export function feishuSignature(timestamp: string, nonce: string, encryptKey: string, rawBody: Buffer): string {
  return createHash("sha256")
    .update(Buffer.concat([Buffer.from(`${timestamp}${nonce}${encryptKey}`, "utf8"), rawBody]))
    .digest("hex");
}

export function verifyFeishuSignature(request: SignedRequest, encryptKey: string): SignatureVerdict {
  const { timestamp, nonce, signature } = request;
  if (!timestamp || !nonce || !signature) return { ok: false, reason: "unsigned" };
  const expected = Buffer.from(feishuSignature(timestamp, nonce, encryptKey, request.rawBody), "utf8");
  const given = Buffer.from(signature.toLowerCase(), "utf8");
  return expected.length === given.length && timingSafeEqual(expected, given) ? { ok: true } : { ok: false, reason: "bad signature" };
}

/** The decrypted text, or undefined when it does not decrypt with this key (forged, or another app's). */
export function decryptFeishuEvent(encrypt: string, encryptKey: string): string | undefined {
  const raw = Buffer.from(encrypt, "base64");
  // An IV and at least one block.
  if (raw.length < 32 || (raw.length - 16) % 16 !== 0) return undefined;
  try {
    const key = createHash("sha256").update(encryptKey, "utf8").digest();
    const decipher = createDecipheriv("aes-256-cbc", key, raw.subarray(0, 16));
    return Buffer.concat([decipher.update(raw.subarray(16)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
