/**
 * `cryptoRandom` draws from a pool of CSPRNG bytes (shared/random.ts): every
 * draw has the length asked for, and no byte is handed out twice (draws
 * across a refill included).
 */
import { describe, expect, it } from "vitest";
import { cryptoRandom } from "../../../shared/random.js";

describe("cryptoRandom", () => {
  it("gives each draw its own bytes, across pool refills, in the length asked for", () => {
    // 16-byte ids until well past two 4 KiB refills: any reuse would show as a repeated id.
    const ids = Array.from({ length: 1000 }, () => cryptoRandom.bytes(16));
    expect(ids.every((b) => b.length === 16)).toBe(true);
    expect(new Set(ids.map((b) => b.toString("hex"))).size).toBe(ids.length);
    expect(cryptoRandom.bytes(5000)).toHaveLength(5000);
    expect(cryptoRandom.bytes(0)).toHaveLength(0);
  });

  it("float stays in [0, 1)", () => {
    for (let i = 0; i < 2000; i++) {
      const f = cryptoRandom.float();
      expect(f >= 0 && f < 1).toBe(true);
    }
  });
});
