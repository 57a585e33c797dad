/** Stored records to the shapes the API answers with. */
import type { z } from "zod";
import { PROVIDERS, TIER_LIMITS } from "../shared/schemas/common.js";
import type { Instance } from "../shared/schemas/instances.js";
import type { ScopedKey } from "../shared/schemas/keys.js";
import type { Organization } from "../shared/schemas/organization.js";
import type { EmulatorEnv } from "./env.js";
import type { InstanceRecord, KeyRecord, OrganizationRecord } from "./store/state.js";

export function organizationView(org: OrganizationRecord): Organization {
  return {
    id: org.id,
    name: org.name,
    model_providers: PROVIDERS.filter((p) => org.provider_keys[p]),
    subscription_tier: org.tier,
    instance_limit: TIER_LIMITS[org.tier],
    instance_count: org.instance_ids.length,
    created_at: org.created_at,
    updated_at: org.updated_at,
  };
}

export function keyView(key: KeyRecord, now: number): ScopedKey {
  const expired = key.expires_at !== null && Date.parse(key.expires_at) <= now;
  return {
    id: key.id,
    name: key.name,
    key_prefix: "svc_sk_",
    is_active: !key.revoked_at && !expired,
    expires_at: key.expires_at,
    last_used_at: key.last_used_at,
    created_at: key.created_at,
    instances: key.instance_order.map((instance_id) => ({ instance_id, permissions: [...(key.grants[instance_id] ?? [])] })),
  };
}

export function instanceView(env: EmulatorEnv, instance: InstanceRecord): z.input<typeof Instance> {
  return {
    id: instance.id,
    organization_id: instance.organization_id,
    name: instance.name,
    status: instance.status,
    model_provider: instance.model_provider,
    sandbox_provider: instance.sandbox_provider,
    sandbox_id: instance.sandbox_id,
    gateway_url: env.gatewayUrlOf(instance),
    runtime_version: instance.runtime_version,
    runtime_config: instance.runtime_config,
    region: instance.region,
    error_message: instance.error_message,
    created_at: instance.created_at,
    updated_at: instance.updated_at,
  };
}
