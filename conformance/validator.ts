/**
 * Where the contract's shapes plug into the kit: every exchange a check makes
 * is handed to the contract checker (shared/contract), and each drift it names
 * fails that check. The kit has no schema logic of its own: it judges by the
 * same OpenAPI document and event schemas as the emulator and the validating proxy.
 */
import { type ContractValidator, createContractValidator, type Drift } from "../shared/contract/index.js";
import type { Exchange } from "./exchange.js";

export type { Drift };

export type ValidateExchange = (exchange: Exchange) => Drift[];

export const describeDrift = (d: Drift): string => `${d.jsonPath}: expected ${d.expected}, got ${d.actual}`;

/** The answers' side only: the kit sends malformed requests on purpose. */
export function contractValidation(validator: ContractValidator = createContractValidator()): ValidateExchange {
  return (ex) => validator.checkResponseText({ method: ex.method, route: ex.route, status: ex.status, headers: ex.headers, text: ex.text });
}
