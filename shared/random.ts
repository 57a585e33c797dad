import { createHash, randomBytes, randomFillSync } from "node:crypto";

/**
 * Randomness as an explicit dependency. With a seed every id, key and fault
 * decision repeats from run to run; without one it is cryptographic.
 */
export interface Random {
  bytes(n: number): Buffer;
  /** Uniform in [0, 1). */
  float(): number;
  /**
   * Bytes drawn so far, for a seeded source: persisted with the state so a
   * restart continues the sequence instead of repeating it. Absent for
   * cryptographic randomness.
   */
  position?(): number;
}

/** Bytes fetched from the system's CSPRNG at a time (draws this size or larger go straight to it). */
const POOL_BYTES = 4096;

/**
 * Cryptographic bytes from a pool refilled 4 KiB at a time, each byte handed
 * out once and copied, as Node's own `randomUUID` caches its entropy. A call to
 * the CSPRNG per id (entry ids, request ids) was a measurable share of the
 * daemon's CPU per turn.
 */
function pooledCryptoBytes(): (n: number) => Buffer {
  let pool = Buffer.alloc(0);
  let offset = 0;
  return (n) => {
    if (n >= POOL_BYTES) return randomBytes(n);
    if (offset + n > pool.length) {
      pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
      offset = 0;
    }
    const out = Buffer.from(pool.subarray(offset, offset + n));
    offset += n;
    return out;
  };
}

const cryptoBytes = pooledCryptoBytes();

export const cryptoRandom: Random = {
  bytes: cryptoBytes,
  float: () => cryptoBytes(6).readUIntBE(0, 6) / 2 ** 48,
};

/**
 * SHA-256 in counter mode over the seed: simple, portable, repeatable.
 * `start` skips that many bytes (a persisted `position()`), so the draws
 * continue where an earlier run stopped.
 */
export function seededRandom(seed: string | number, start = 0): Random {
  const BLOCK = 32;
  let counter = Math.floor(start / BLOCK);
  let pool = Buffer.alloc(0);
  let drawn = start;
  if (start % BLOCK)
    pool = createHash("sha256")
      .update(`${seed}:${counter++}`)
      .digest()
      .subarray(start % BLOCK);
  const take = (n: number): Buffer => {
    drawn += n;
    while (pool.length < n) {
      const block = createHash("sha256").update(`${seed}:${counter++}`).digest();
      pool = Buffer.concat([pool, block]);
    }
    const out = pool.subarray(0, n);
    pool = pool.subarray(n);
    return Buffer.from(out);
  };
  return {
    bytes: take,
    float: () => take(6).readUIntBE(0, 6) / 2 ** 48,
    position: () => drawn,
  };
}

export const hex = (random: Random, bytes: number): string => random.bytes(bytes).toString("hex");

/** RFC 4122 version 4 UUID from the given randomness. */
export function uuid(random: Random): string {
  const b = random.bytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
