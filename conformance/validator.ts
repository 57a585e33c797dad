/**
 * Where the contract's shapes plug into the kit: every exchange a check makes
 * is handed to a validator, and each drift it names fails that check. The kit
 * owns no schema logic of its own; the validator judges against the same
 * schemas the emulator and its OpenAPI document use.
 */
import type { Exchange } from "./exchange.js";

/** One way an answer differs from the contract. */
export interface Drift {
  /** JSON path into the body (`$.organization.id`), or `status`, `header:content-type`, `$events[3].type`. */
  path: string;
  /** What the contract says. */
  expected: string;
  /** What came back. */
  actual: string;
}

export type ValidateExchange = (exchange: Exchange) => Drift[];

export const describeDrift = (d: Drift): string => `${d.path}: expected ${d.expected}, got ${d.actual}`;
