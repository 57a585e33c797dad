import { createHash } from "node:crypto";
import { isoAt } from "../../shared/clock.js";
import { hex, uuid } from "../../shared/random.js";
import { PROVIDERS } from "../../shared/schemas/common.js";
import type { EmulatorEnv } from "../env.js";
import { hashKey } from "../rules/credentials.js";
import type { Handlers } from "../http/router.js";
import type { BillingSession, OrganizationRecord } from "../store/state.js";
import { adoptOrganization, sandboxOfOrganization } from "../sandboxes/membership.js";
import { organizationView } from "../views.js";

type OrganizationHandlers = Pick<Handlers, "signup" | "getOrganization" | "updateOrganization" | "getSubscription" | "createCheckout" | "createPortal">;

export function organizationHandlers(env: EmulatorEnv): OrganizationHandlers {
  const state = () => env.store.data;
  const now = () => isoAt(env.clock.now());

  const billingUrl = (org: OrganizationRecord, kind: BillingSession["kind"], tier: BillingSession["tier"]) => {
    const session: BillingSession = { id: hex(env.random, 16), organization_id: org.id, kind, tier, created_at: now() };
    state().billing[session.id] = session;
    sandboxOfOrganization(state(), org)?.billing_ids.push(session.id);
    env.store.commit();
    return { url: `${env.publicUrl()}/_emulator/billing/${session.id}` };
  };

  return {
    signup({ body, req }) {
      const at = now();
      const org: OrganizationRecord = {
        id: uuid(env.random),
        name: body.name,
        tier: "shrimp",
        provider_keys: {},
        instance_ids: [],
        key_ids: [],
        created_at: at,
        updated_at: at,
      };
      const apiKey = `svc_org_${hex(env.random, 32)}`;
      adoptOrganization(state(), req, org, hashKey(apiKey));
      state().organizations[org.id] = org;
      state().credentials[hashKey(apiKey)] = { kind: "org", organization_id: org.id };
      env.store.commit();
      return { api_key: apiKey, organization: organizationView(org) };
    },

    getOrganization: ({ caller }) => organizationView(caller.organization),

    updateOrganization({ caller, body }) {
      const org = caller.organization;
      if (body.name !== undefined) org.name = body.name;
      for (const provider of PROVIDERS) {
        const value = body.model_api_keys?.[provider];
        if (value === undefined) continue;
        if (value === "") delete org.provider_keys[provider];
        // Only a fingerprint is kept: the emulator never needs the key itself.
        else org.provider_keys[provider] = { fingerprint: createHash("sha256").update(value).digest("hex").slice(0, 16), set_at: now() };
      }
      org.updated_at = now();
      env.store.commit();
      return organizationView(org);
    },

    getSubscription({ caller }) {
      const view = organizationView(caller.organization);
      return { tier: view.subscription_tier, instance_limit: view.instance_limit, instance_count: view.instance_count };
    },

    createCheckout: ({ caller, body }) => billingUrl(caller.organization, "checkout", body.tier),
    createPortal: ({ caller }) => billingUrl(caller.organization, "portal", null),
  };
}
