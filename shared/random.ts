import { createHash, randomBytes } from "node:crypto";

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

export const cryptoRandom: Random = {
  bytes: (n) => randomBytes(n),
  float: () => randomBytes(6).readUIntBE(0, 6) / 2 ** 48,
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
