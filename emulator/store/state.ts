/**
 * The emulator's whole state: plain JSON, kept in memory, written by the store.
 * Records are keyed by id (and credentials by key hash) so the request path
 * does lookups, never scans.
 */
import type { GatewayState } from "../gateway/index.js";
import type { Permission, Provider, Tier } from "../../shared/schemas/common.js";
import type { InstanceStatus } from "../../shared/schemas/instances.js";

export const STATE_VERSION = 1;

export interface OrganizationRecord {
  id: string;
  name: string;
  tier: Tier;
  /** Only a fingerprint of each provider key is kept: never the key. */
  provider_keys: Partial<Record<Provider, { fingerprint: string; set_at: string }>>;
  /** Non-terminated instances, oldest first. */
  instance_ids: string[];
  /** Scoped keys, oldest first. */
  key_ids: string[];
  created_at: string;
  updated_at: string;
}

export type Credential = { kind: "org"; organization_id: string } | { kind: "scoped"; key_id: string };

export interface KeyRecord {
  id: string;
  organization_id: string;
  name: string;
  key_hash: string;
  grants: Record<string, Permission[]>;
  /** Grant order as created, for a stable `instances` list. */
  instance_order: string[];
  revoked_at: string | null;
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export interface ChannelRecord {
  enabled: boolean;
  /** Token channels connect at once; interactive ones once their QR is scanned. */
  connected: boolean;
  /** Field values as given, secrets replaced by a redacted fingerprint (`<redacted:1a2b...>`). */
  config: Record<string, string>;
  /** The QR an interactive pairing waits to have scanned; absent otherwise. */
  qr_data?: string;
  connected_at?: string;
  /** Pairing codes approved through `pair`, oldest first. */
  paired_codes?: string[];
  /** Gateway restarts this channel's changes caused, and when the last one happened. */
  restarts: number;
  restarted_at: string | null;
  updated_at: string;
}

export interface SkillRecord {
  enabled: boolean;
  /** Variable names set, values kept only as redacted fingerprints. */
  env: Record<string, string>;
  config: Record<string, unknown>;
  /** Registry version installed. */
  version: string;
  installed_at: string;
  updated_at: string;
}

export interface InstanceRecord {
  id: string;
  organization_id: string;
  name: string;
  status: InstanceStatus;
  model_provider: Provider;
  sandbox_provider: string;
  sandbox_id: string;
  /** null: the bundled gateway (its address can change between runs). */
  gateway_override: string | null;
  runtime_version: string;
  runtime_config: Record<string, unknown> | null;
  region: string | null;
  error_message: string | null;
  /** Provisioning completes at this epoch ms (lazily, on the next look). */
  ready_at: number | null;
  /** Provisioning ends in `error` instead (fail-provision, fault rule). */
  fail_provision: string | null;
  channels: Record<string, ChannelRecord>;
  skills: Record<string, SkillRecord>;
  created_at: string;
  updated_at: string;
}

export interface BillingSession {
  id: string;
  organization_id: string;
  kind: "checkout" | "portal";
  tier: Tier | null;
  created_at: string;
}

export interface EmulatorState {
  version: number;
  organizations: Record<string, OrganizationRecord>;
  credentials: Record<string, Credential>;
  keys: Record<string, KeyRecord>;
  instances: Record<string, InstanceRecord>;
  billing: Record<string, BillingSession>;
  gateway: GatewayState;
}

export function emptyState(): EmulatorState {
  return {
    version: STATE_VERSION,
    organizations: {},
    credentials: {},
    keys: {},
    instances: {},
    billing: {},
    gateway: { responses: {}, heads: {} },
  };
}
