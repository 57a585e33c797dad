/**
 * Sandboxes of the emulator's control plane (`/_emulator/sandboxes`): one
 * emulator shared by many tests that never see each other. Not part of the service.
 */
import { z } from "zod";

export const SandboxCreateRequest = z.strictObject({
  /** A label for people reading the journal (default: the id). */
  name: z.string().min(1).max(128).optional(),
  /** Where the sandbox's clock starts (ISO time; default: the emulator's clock now). */
  clock_start: z.iso.datetime().optional(),
  /** A fixture (docs/emulator.md, "Fixtures") loaded into the sandbox; checked whole, every problem named by its place. */
  fixtures: z.record(z.string(), z.unknown()).optional(),
});
export type SandboxCreateRequest = z.output<typeof SandboxCreateRequest>;

/** What a fixture made, by the names it gave: how a test finds the ids. */
export const LoadedFixture = z.object({
  organizations: z.array(
    z.object({
      name: z.string(),
      id: z.string(),
      instances: z.array(
        z.object({
          name: z.string(),
          id: z.string(),
          /** Each session's earlier turns' response ids, oldest first (the last is the head to continue from). */
          sessions: z.record(z.string(), z.array(z.string())),
        }),
      ),
    }),
  ),
});
export type LoadedFixture = z.output<typeof LoadedFixture>;

export const SandboxClock = z.object({
  /** The sandbox's time now (ISO). */
  now: z.string(),
  /** How far it is ahead of the emulator's clock, ms. */
  offset_ms: z.number().int(),
});

export const Sandbox = z.object({
  id: z.string(),
  name: z.string(),
  /** The organization made with the sandbox (its key is `api_key` of the creation answer). */
  organization_id: z.string(),
  organization_ids: z.array(z.string()),
  instance_count: z.number().int().min(0),
  request_count: z.number().int().min(0),
  clock: SandboxClock,
  created_at: z.string(),
});

export const SandboxCreated = Sandbox.extend({
  /** The organization key, returned once. */
  api_key: z.string(),
  /** With `fixtures`: what they made. */
  fixture: LoadedFixture.optional(),
});

export const SandboxRequestsQuery = z.strictObject({
  method: z.string().max(16).optional(),
  /** The path as sent (exact), e.g. `/v1/instances`. */
  path: z.string().max(2048).optional(),
  /** The route's operation id, e.g. `createInstance`. */
  route: z.string().max(64).optional(),
  status: z.coerce.number().int().min(100).max(599).optional(),
  instance_id: z.string().max(64).optional(),
  session: z.string().max(1024).optional(),
});

export const SandboxRequest = z.object({
  /** Order of arrival within the sandbox, from 1. */
  seq: z.number().int().min(1),
  at: z.string(),
  method: z.string(),
  path: z.string(),
  /** The route's operation id; null when the request matched no route. */
  route: z.string().nullable(),
  status: z.number().int(),
  instance_id: z.string().nullable(),
  session: z.string().nullable(),
  key_kind: z.enum(["org", "scoped", "none"]),
  /** The JSON body sent, secrets redacted; null without one. */
  body: z.unknown(),
  ms: z.number().min(0),
  /** The `x-request-id` the answer carried. */
  request_id: z.string(),
});

export const SandboxRequests = z.object({
  count: z.number().int().min(0),
  requests: z.array(SandboxRequest),
});

export const UnmatchedRequest = z.object({
  at: z.string(),
  method: z.string(),
  path: z.string(),
  /** Why nothing matched. */
  reason: z.enum(["unknown_route", "wrong_method", "unknown_key"]),
  /** The route nearest to what was sent (`METHOD /path/{param}`), when there is one. */
  closest_route: z.string().nullable(),
  status: z.number().int(),
});

export const SandboxClockRequest = z
  .strictObject({
    /** Move the clock forward by this many ms. */
    advance_ms: z
      .number()
      .int()
      .min(0)
      .max(10 * 365 * 24 * 3600 * 1000)
      .optional(),
    /** Or set it to this time (forward only). */
    set: z.iso.datetime().optional(),
  })
  .refine((v) => (v.advance_ms === undefined) !== (v.set === undefined), "Give advance_ms or set, exactly one");
export type SandboxClockRequest = z.output<typeof SandboxClockRequest>;

export const SandboxClockMove = SandboxClock.extend({
  /** What the move made happen, in time order. */
  happened: z.array(
    z.object({
      kind: z.enum(["instance_running", "instance_error", "key_expired"]),
      id: z.string(),
      at: z.string(),
    }),
  ),
});
