/**
 * API keys are never kept in clear: the state keys credentials by the
 * SHA-256 of the key (store/schema.ts, `KeyHash`), so a lookup is one hash
 * and a stolen state.json holds no key that works.
 */
import { createHash } from "node:crypto";

/**
 * A request's key is hashed twice in a row (its sandbox, then its caller): the
 * last key and hash are remembered, in memory only, so the second is free.
 */
let lastKey: { raw: string; hash: string } | undefined;
export const hashKey = (raw: string): string => {
  if (lastKey?.raw !== raw) lastKey = { raw, hash: createHash("sha256").update(raw).digest("hex") };
  return lastKey.hash;
};
