/**
 * The state's records as zod schemas: what `state.json`, a conversation log
 * or a snapshot import holds is parsed with these, never cast. Ids must have
 * the form the API mints (UUID v4, `resp_` + 32 hex, a SHA-256 key hash), so
 * an id that reaches a filesystem path can only be one of ours.
 */
import { z } from "zod";
import { MAX_JSON_DEPTH, deeperThan } from "../../shared/json-depth.js";
import { Permission, Provider, Tier } from "../../shared/schemas/common.js";
import { InstanceStatus } from "../../shared/schemas/instances.js";
import { CHANNELS } from "../channels/catalog.js";
import { findSkill } from "../skills/registry.js";

/** The UUID v4 form `uuid()` mints (lowercase, version 4, RFC 4122 variant). */
export const ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const isMintedId = (id: string): boolean => ID_PATTERN.test(id);

const Id = z.string().regex(ID_PATTERN, "Must be a UUID v4 in the form the API mints");
const ResponseId = z.string().regex(/^resp_[0-9a-f]{32}$/, "Must be resp_ followed by 32 hex digits");
const KeyHash = z.string().regex(/^[0-9a-f]{64}$/, "Must be a SHA-256 hex digest");
const BillingId = z.string().regex(/^[0-9a-f]{32}$/, "Must be 32 hex digits");
const Iso = z.iso.datetime();
/** `sbx_` and 24 hex digits, as `POST /_emulator/sandboxes` mints. */
export const SANDBOX_ID_PATTERN = /^sbx_[0-9a-f]{24}$/;
const SandboxId = z.string().regex(SANDBOX_ID_PATTERN, "Must be sbx_ followed by 24 hex digits");
const Text = z.string().max(65_536);
/** A JSON object a client gave (runtime_config, skill config): bounded like any request body. */
const ClientJson = z.record(z.string(), z.unknown()).refine((v) => !deeperThan(v, MAX_JSON_DEPTH), `Nested deeper than ${MAX_JSON_DEPTH} levels`);

/** One output item of the fake model's answer, as a stored turn keeps it (gateway/reply.ts builds them). */
export const AnswerItem = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("reasoning"), id: z.string(), summary: z.string() }),
  z.strictObject({ type: z.literal("message"), id: z.string(), text: z.string() }),
  z.strictObject({ type: z.literal("refusal"), id: z.string(), refusal: z.string() }),
  z.strictObject({ type: z.literal("function_call"), id: z.string(), call_id: z.string(), name: z.string(), arguments: z.string() }),
]);
export type AnswerItem = z.output<typeof AnswerItem>;

/**
 * Kept with a stored turn when the answer is more than the echo's one text
 * message: a scripted rule fired, a tool was called, an object was made.
 */
export const AnswerRecord = z.strictObject({
  /** The script rule that answered (absent: the fake model's own default). */
  rule: z.string().optional(),
  items: z.array(AnswerItem),
  status: z.enum(["completed", "incomplete"]),
});
export type AnswerRecord = z.output<typeof AnswerRecord>;

export const OrganizationRecord = z.strictObject({
  id: Id,
  name: Text,
  tier: Tier,
  provider_keys: z.partialRecord(Provider, z.strictObject({ fingerprint: z.string().regex(/^[0-9a-f]{16}$/), set_at: Iso })),
  instance_ids: z.array(Id),
  key_ids: z.array(Id),
  /** The sandbox the organization belongs to; absent outside sandboxes. */
  sandbox_id: SandboxId.optional(),
  created_at: Iso,
  updated_at: Iso,
});

export const Credential = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("org"), organization_id: Id }),
  z.strictObject({ kind: z.literal("scoped"), key_id: Id }),
]);

export const KeyRecord = z.strictObject({
  id: Id,
  organization_id: Id,
  name: Text,
  key_hash: KeyHash,
  grants: z.record(Id, z.array(Permission)),
  instance_order: z.array(Id),
  revoked_at: Iso.nullable(),
  expires_at: Iso.nullable(),
  last_used_at: Iso.nullable(),
  created_at: Iso,
});

const CHANNEL_NAMES = new Set(CHANNELS.map((spec) => spec.channel));
const ChannelName = z.string().refine((name) => CHANNEL_NAMES.has(name), "Unknown channel");
const SkillName = z.string().refine((name) => findSkill(name) !== undefined, "Unknown skill");

export const ChannelRecord = z.strictObject({
  enabled: z.boolean(),
  connected: z.boolean(),
  config: z.record(z.string(), Text),
  qr_data: Text.optional(),
  connected_at: Iso.optional(),
  paired_codes: z.array(Text).optional(),
  restarts: z.number().int().min(0),
  restarted_at: Iso.nullable(),
  updated_at: Iso,
});

export const SkillRecord = z.strictObject({
  enabled: z.boolean(),
  env: z.record(z.string(), Text),
  config: ClientJson,
  version: Text,
  installed_at: Iso,
  updated_at: Iso,
});

export const InstanceRecord = z.strictObject({
  id: Id,
  organization_id: Id,
  name: Text,
  status: InstanceStatus,
  model_provider: Provider,
  sandbox_provider: Text,
  sandbox_id: Text,
  gateway_override: z.url().nullable(),
  runtime_version: Text,
  runtime_config: ClientJson.nullable(),
  region: Text.nullable(),
  error_message: Text.nullable(),
  ready_at: z.number().int().nullable(),
  fail_provision: Text.nullable(),
  channels: z.record(ChannelName, ChannelRecord),
  skills: z.record(SkillName, SkillRecord),
  created_at: Iso,
  updated_at: Iso,
});

export const BillingSession = z.strictObject({
  id: BillingId,
  organization_id: Id,
  kind: z.enum(["checkout", "portal"]),
  tier: Tier.nullable(),
  created_at: Iso,
});

export const StoredResponse = z.strictObject({
  id: ResponseId,
  instance_id: Id,
  session: z.string().max(1024),
  parent_id: ResponseId.nullable(),
  input_text: z.string(),
  output_text: z.string(),
  model: z.string().max(256),
  created_at: z.number().int(),
  answer: AnswerRecord.optional(),
});

/**
 * A sandbox: what it holds is listed here so removing it costs in proportion
 * to its own contents, never a scan of everyone's.
 */
export const SandboxRecord = z.strictObject({
  id: SandboxId,
  name: Text,
  /** The organization made with the sandbox first: a reset keeps it and its key. */
  organization_id: Id,
  organization_ids: z.array(Id),
  /** Hash of each organization key made in the sandbox. */
  credential_hashes: z.array(KeyHash),
  /** Every instance ever created in it, terminated ones included. */
  instance_ids: z.array(Id),
  billing_ids: z.array(BillingId),
  /** How far its clock is ahead of the emulator's, ms. */
  clock_offset_ms: z.number().int(),
  /** The offset it was created with: a reset goes back to it. */
  initial_clock_offset_ms: z.number().int(),
  created_at: Iso,
});

/** `${instance id}\0${session}` -> the session's latest response id. */
const HeadKey = z.string().refine((key) => {
  const at = key.indexOf("\u0000");
  return at > 0 && isMintedId(key.slice(0, at));
}, "Must be an instance id and a session joined by NUL");

export const GatewayState = z.strictObject({
  responses: z.record(ResponseId, StoredResponse),
  heads: z.record(HeadKey, ResponseId),
});

/** The records every form of the state holds (in memory, in `state.json`, in a snapshot). */
const StateRecords = z.strictObject({
  version: z.literal(1),
  organizations: z.record(Id, OrganizationRecord),
  credentials: z.record(KeyHash, Credential),
  keys: z.record(Id, KeyRecord),
  instances: z.record(Id, InstanceRecord),
  billing: z.record(BillingId, BillingSession),
  /** Absent in files written before sandboxes existed. */
  sandboxes: z.record(SandboxId, SandboxRecord).default({}),
});

/** The whole state in memory. */
export const EmulatorState = StateRecords.extend({ gateway: GatewayState });

/** The small control state kept in `state.json` (conversations live in their own logs). */
export const ControlState = StateRecords.extend({
  /** Bytes the seeded generator had drawn (absent without a seed). */
  random_position: z.number().int().min(0).optional(),
  /** Present only in files written before conversations moved to their own logs. */
  gateway: GatewayState.optional(),
});

/** A whole state as exported by `GET /_emulator/snapshot` (without `workspaces`). */
export const SnapshotState = ControlState.extend({ gateway: GatewayState });
