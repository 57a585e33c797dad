import { isoAt } from "../../shared/clock.js";
import { hex, uuid } from "../../shared/random.js";
import type { Permission } from "../../shared/schemas/common.js";
import type { EmulatorEnv } from "../env.js";
import { badRequest, notFound } from "../errors.js";
import { hashKey } from "../rules/credentials.js";
import type { Handlers } from "../http/router.js";
import type { KeyRecord } from "../store/state.js";
import { keyView } from "../views.js";

type KeyHandlers = Pick<Handlers, "createKey" | "listKeys" | "getKey" | "revokeKey">;

export function keyHandlers(env: EmulatorEnv): KeyHandlers {
  const state = () => env.store.data;

  const ownKey = (organizationId: string, keyId: string): KeyRecord => {
    const key = state().keys[keyId];
    if (!key || key.organization_id !== organizationId) throw notFound(`Key ${keyId} not found.`);
    return key;
  };

  return {
    createKey({ caller, body }) {
      const org = caller.organization;
      const nowMs = env.clock.now();
      let expiresAt: string | null = null;
      if (body.expires_at !== undefined) {
        const ms = Date.parse(body.expires_at);
        if (ms <= nowMs) throw badRequest("expires_at must be in the future.");
        expiresAt = isoAt(ms);
      }
      const instanceIds = [...new Set(body.instance_ids)];
      for (const id of instanceIds) {
        const instance = state().instances[id];
        if (!instance || instance.organization_id !== org.id || instance.status === "terminated") {
          throw notFound(`Instance ${id} not found.`);
        }
      }
      const permissions = [...new Set(body.permissions)] as Permission[];
      const raw = `svc_sk_${hex(env.random, 32)}`;
      const key: KeyRecord = {
        id: uuid(env.random),
        organization_id: org.id,
        name: body.name,
        key_hash: hashKey(raw),
        grants: Object.fromEntries(instanceIds.map((id) => [id, permissions])),
        instance_order: instanceIds,
        revoked_at: null,
        expires_at: expiresAt,
        last_used_at: null,
        created_at: isoAt(nowMs),
      };
      state().keys[key.id] = key;
      state().credentials[key.key_hash] = { kind: "scoped", key_id: key.id };
      org.key_ids.push(key.id);
      env.store.commit();
      return { ...keyView(key, nowMs), raw_key: raw };
    },

    listKeys({ caller }) {
      const nowMs = env.clock.now();
      return caller.organization.key_ids.flatMap((id) => {
        const key = state().keys[id];
        return key ? [keyView(key, nowMs)] : [];
      });
    },

    getKey: ({ caller, params }) => keyView(ownKey(caller.organization.id, params.key_id), env.clock.now()),

    revokeKey({ caller, params }) {
      const key = ownKey(caller.organization.id, params.key_id);
      if (!key.revoked_at) {
        key.revoked_at = isoAt(env.clock.now());
        env.store.commit();
      }
    },
  };
}
