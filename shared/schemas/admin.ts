import { z } from "zod";
import { InstanceStatus } from "./instances.js";
import { Tier } from "./common.js";

/** Control plane (`/_emulator`): not part of the service, for developers and tests. */
export const FaultRuleRequest = z.strictObject({
  target: z.enum(["gateway", "api", "provision"]),
  instance_id: z.string().optional(),
  /** For `api`: a path prefix such as `/v1/instances`; optional method filter. */
  path: z.string().optional(),
  method: z.string().optional(),
  status: z.number().int().min(400).max(599).optional(),
  error: z.enum(["reset", "timeout"]).optional(),
  /** With `error: "reset"`: a streamed answer is cut after this many text deltas (a non-streamed one is reset at once). */
  after_deltas: z.number().int().min(0).max(1_000_000).optional(),
  latency_ms: z.number().int().min(0).max(600_000).optional(),
  probability: z.number().min(0).max(1).optional(),
  times: z.number().int().min(1).optional(),
});
export const FaultRule = FaultRuleRequest.extend({
  id: z.string(),
  remaining: z.number().int().min(0).nullable(),
  hits: z.number().int().min(0),
});
export type FaultRule = z.infer<typeof FaultRule>;

export const ForceStateRequest = z.strictObject({
  status: InstanceStatus,
  error_message: z.string().max(1024).optional(),
  gateway_url: z.url().optional(),
});
export const TierRequest = z.strictObject({ tier: Tier });
/** `degraded` while the store cannot write: the state is kept in memory and writes are retried. */
export const Health = z.object({
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  store: z
    .object({
      persistent: z.boolean(),
      ok: z.boolean(),
      pending: z.boolean(),
      failing_since: z.string().nullable(),
      last_error: z.string().nullable(),
      failed_attempts: z.number().int(),
      writes: z.number().int(),
    })
    .optional(),
});
export const JournalEntry = z.object({
  at: z.string(),
  method: z.string(),
  path: z.string(),
  status: z.number().int().min(100).max(599),
  key_kind: z.enum(["org", "scoped", "none"]),
  ms: z.number().min(0),
  /** The `x-request-id` the answer carried. */
  request_id: z.string(),
});
