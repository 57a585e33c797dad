/**
 * The emulator's whole state: plain JSON, kept in memory, written by the store.
 * Records are keyed by id (and credentials by key hash) so the request path
 * does lookups, never scans. Every record is defined once, as a zod schema in
 * schema.ts; the types here are inferred from those schemas, so what is read
 * back from disk or a snapshot is the state's own type without a cast.
 */
import type { z } from "zod";
import type * as schema from "./schema.js";

export const STATE_VERSION = 1 as const;

export type OrganizationRecord = z.output<typeof schema.OrganizationRecord>;
export type Credential = z.output<typeof schema.Credential>;
export type KeyRecord = z.output<typeof schema.KeyRecord>;
export type ChannelRecord = z.output<typeof schema.ChannelRecord>;
export type SkillRecord = z.output<typeof schema.SkillRecord>;
export type InstanceRecord = z.output<typeof schema.InstanceRecord>;
export type BillingSession = z.output<typeof schema.BillingSession>;
export type SandboxRecord = z.output<typeof schema.SandboxRecord>;
/** One completed turn, as the emulator's store keeps it (`created_at` in epoch seconds). */
export type StoredResponse = z.output<typeof schema.StoredResponse>;
/** Turns by id, and `${instanceId}\u0000${session}` -> id of the session's latest response. */
export type GatewayState = z.output<typeof schema.GatewayState>;
export type EmulatorState = z.output<typeof schema.EmulatorState>;
/** What `state.json` holds: the state without conversations, and the seeded generator's position. */
export type ControlFile = z.output<typeof schema.ControlState>;

/** The key of a session's head in `GatewayState.heads`: instance id and session, NUL between. */
export const headKey = (instanceId: string, session: string): string => `${instanceId}\u0000${session}`;

export function emptyState(): EmulatorState {
  return {
    version: STATE_VERSION,
    organizations: {},
    credentials: {},
    keys: {},
    instances: {},
    billing: {},
    sandboxes: {},
    gateway: { responses: {}, heads: {} },
  };
}
