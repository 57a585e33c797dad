import { isoAt } from "../../shared/clock.js";
import { sandboxOfOrganization } from "../sandboxes/membership.js";
import { hex, uuid } from "../../shared/random.js";
import { TIER_LIMITS } from "../../shared/schemas/common.js";
import type { EmulatorEnv } from "../env.js";
import { ApiError, badRequest, conflict, notFound } from "../errors.js";
import type { Handlers } from "../http/router.js";
import type { InstanceRecord } from "../store/state.js";
import { instanceView } from "../views.js";
import { withoutUndefined } from "../../shared/util/without-undefined.js";

type InstanceHandlers = Pick<
  Handlers,
  "createInstance" | "listInstances" | "getInstance" | "getInstanceStatus" | "updateInstance" | "startInstance" | "stopInstance" | "deleteInstance"
>;

/** The name that makes provisioning fail, so tests reach the `error` state. */
export const FAIL_PROVISION_NAME = "fail-provision";

export function instanceHandlers(env: EmulatorEnv): InstanceHandlers {
  const state = () => env.store.data;
  const touched = (instance: InstanceRecord) => {
    instance.updated_at = isoAt(env.clock.now());
    env.store.commit();
  };

  return {
    async createInstance({ caller, body }) {
      const org = caller.organization;
      const limit = TIER_LIMITS[org.tier];
      if (org.instance_ids.length >= limit) {
        throw new ApiError(402, `Instance limit reached (${org.instance_ids.length}/${limit}). Upgrade your subscription.`);
      }
      const provider = body.model_provider ?? "anthropic";
      if (!org.provider_keys[provider]) {
        throw badRequest(`No API key is set for model provider '${provider}'. Add one with PATCH /v1/organization (model_api_keys).`);
      }
      const nowMs = env.clock.now();
      const id = uuid(env.random);
      const failure =
        body.name === FAIL_PROVISION_NAME
          ? "Provisioning failed: the sandbox could not be created."
          : env.faults.take({ target: "provision", instanceId: id, path: "/v1/instances", method: "POST", ...withoutUndefined({ sandboxId: org.sandbox_id }) })
            ? "Provisioning failed: injected fault."
            : null;
      const instance: InstanceRecord = {
        id,
        organization_id: org.id,
        name: body.name,
        status: "provisioning",
        model_provider: provider,
        sandbox_provider: body.sandbox_provider ?? "sandbox",
        sandbox_id: `sbx_${hex(env.random, 12)}`,
        gateway_override: env.settings.gatewayUrl ?? null,
        runtime_version: body.runtime_version ?? "v1",
        runtime_config: body.runtime_config ?? null,
        region: body.region ?? null,
        error_message: null,
        ready_at: nowMs + env.settings.provisionMs,
        fail_provision: failure,
        channels: {},
        skills: {},
        created_at: isoAt(nowMs),
        updated_at: isoAt(nowMs),
      };
      state().instances[id] = instance;
      org.instance_ids.push(id);
      sandboxOfOrganization(state(), org)?.instance_ids.push(id);
      env.store.commit();
      // After the record is in: a concurrent create sees the limit taken while the files are written.
      await env.workspaces.create(instance);
      return instanceView(env, env.settle(instance));
    },

    listInstances({ caller }) {
      const out = [];
      const ids = caller.organization.instance_ids;
      for (let i = ids.length - 1; i >= 0; i--) {
        const instance = state().instances[ids[i]!];
        if (instance) out.push(instanceView(env, env.settle(instance)));
      }
      return out;
    },

    getInstance: ({ instance }) => instanceView(env, instance),

    getInstanceStatus: ({ instance }) => ({ id: instance.id, status: instance.status, gateway_url: env.gatewayUrlOf(instance) }),

    updateInstance({ instance, body }) {
      if (body.name !== undefined) instance.name = body.name;
      if (body.runtime_config !== undefined) instance.runtime_config = body.runtime_config;
      touched(instance);
      return instanceView(env, instance);
    },

    startInstance({ instance }) {
      if (instance.status !== "stopped") throw conflict(`Instance cannot be started (status: ${instance.status}).`);
      instance.status = "running";
      touched(instance);
      return instanceView(env, instance);
    },

    stopInstance({ instance }) {
      if (instance.status !== "running") throw conflict(`Instance is not running (status: ${instance.status}).`);
      instance.status = "stopped";
      touched(instance);
      return instanceView(env, instance);
    },

    deleteInstance({ caller, params }) {
      // The router already answered 404 for an unknown, foreign or terminated id.
      const instance = state().instances[params.instance_id];
      if (!instance || instance.organization_id !== caller.organization.id || instance.status === "terminated") {
        throw notFound(`Instance ${params.instance_id} not found.`);
      }
      terminate(env, instance);
      const org = caller.organization;
      org.instance_ids = org.instance_ids.filter((id) => id !== instance.id);
    },
  };
}

/** Delete from any state: gateway state and workspace go with it, for good. */
export function terminate(env: EmulatorEnv, instance: InstanceRecord): void {
  instance.status = "terminated";
  instance.ready_at = null;
  instance.updated_at = isoAt(env.clock.now());
  env.gateway.forgetInstance(instance.id);
  env.workspaces.destroy(instance.id);
  env.store.commit();
}

/** Lazily completes provisioning once its time has come: no timers to lose across restarts. */
export function settleInstance(env: EmulatorEnv, instance: InstanceRecord): InstanceRecord {
  if (instance.status === "provisioning" && instance.ready_at !== null && env.clock.now() >= instance.ready_at) {
    if (instance.fail_provision) {
      instance.status = "error";
      instance.error_message = instance.fail_provision;
    } else {
      instance.status = "running";
    }
    instance.updated_at = isoAt(instance.ready_at);
    instance.ready_at = null;
    env.store.commit();
  }
  return instance;
}
