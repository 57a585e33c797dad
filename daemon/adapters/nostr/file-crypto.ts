/**
 * NIP-17 kind 15 files: AES-GCM over the whole file, the 16-byte tag after
 * the ciphertext, key and nonce in hex in the message's tags. The shape is
 * Amethyst's and 0xchat's (a 32-byte key, a 16-byte nonce): what people's
 * clients send and can open.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const TAG_BYTES = 16;
const HEX = /^(?:[0-9a-f]{2})+$/i;

export const sha256Hex = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");

export interface EncryptedFile {
  data: Buffer;
  key: string;
  nonce: string;
}

/** `plain` encrypted under a fresh key and nonce. */
export function encryptFile(plain: Buffer): EncryptedFile {
  const key = randomBytes(32);
  const nonce = randomBytes(16);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const data = Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return { data, key: key.toString("hex"), nonce: nonce.toString("hex") };
}

/** The file `sealed` holds, or why not (a wrong key, a damaged file: GCM's tag fails). */
export function decryptFile(sealed: Buffer, keyHex: string, nonceHex: string): { ok: true; data: Buffer } | { ok: false; reason: string } {
  if (!HEX.test(keyHex) || !HEX.test(nonceHex)) return { ok: false, reason: "key or nonce is not hex" };
  const key = Buffer.from(keyHex, "hex");
  const nonce = Buffer.from(nonceHex, "hex");
  const algorithm = key.length === 32 ? "aes-256-gcm" : key.length === 16 ? "aes-128-gcm" : undefined;
  if (!algorithm) return { ok: false, reason: `a ${key.length}-byte key` };
  if (nonce.length < 12 || nonce.length > 32) return { ok: false, reason: `a ${nonce.length}-byte nonce` };
  if (sealed.length < TAG_BYTES) return { ok: false, reason: "shorter than its tag" };
  try {
    const decipher = createDecipheriv(algorithm, key, nonce);
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return { ok: true, data: Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]) };
  } catch {
    return { ok: false, reason: "does not decrypt (wrong key or damaged file)" };
  }
}

/** How much larger the encrypted file is than the file. */
export const ENCRYPTION_OVERHEAD = TAG_BYTES;
