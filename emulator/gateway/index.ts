/**
 * The emulator's bundled fake gateway: an OpenAI-Responses-style HTTP server
 * (`POST /instances/:id/v1/responses`) backed by the deterministic fake model
 * of docs/api-contract.md ("The fake model"), with per-session continuity and injectable faults.
 */
export type {
  FakeGateway,
  GatewayFault,
  GatewayOptions,
  GatewayState,
  StoredResponse,
} from "./types.js";
export type { GatewayError } from "./reply.js";
export { createGateway } from "./server.js";
export { headKey } from "../store/state.js";
export { LONG_MAX, SLEEP_MAX_MS, longText } from "./model.js";
export type { ResponseObject } from "./wire.js";
