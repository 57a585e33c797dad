/**
 * API keys are never kept in clear: the state keys credentials by the
 * SHA-256 of the key (store/schema.ts, `KeyHash`), so a lookup is one hash
 * and a stolen state.json holds no key that works.
 */
import { createHash } from "node:crypto";

export const hashKey = (raw: string): string => createHash("sha256").update(raw).digest("hex");
