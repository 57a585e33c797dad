/**
 * The control plane under `/_emulator` (docs/emulator.md, "Control plane"): health, reset,
 * snapshots, fault rules, forced states, plan changes and the request journal.
 * Snapshots carry the instance trees too (`workspaces`: instance id to its
 * entries, files in base64), so one taken before a reset restores the files.
 */
import { isoAt } from "../../shared/clock.js";
import type { EmulatorEnv } from "../env.js";
import { notFound } from "../errors.js";
import type { Handlers } from "../http/router.js";
import type { RequestLog } from "../events/request-log.js";
import { parseSnapshotState } from "../store/snapshot-check.js";
import { emptyState } from "../store/state.js";
import { organizationView, instanceView } from "../views.js";
import { exportTree, importTree, parseTrees } from "../workspace/snapshot.js";
import { terminate } from "./instances.js";

type AdminHandlers = Pick<
  Handlers,
  | "adminHealth"
  | "adminReset"
  | "adminExportSnapshot"
  | "adminImportSnapshot"
  | "adminCreateFault"
  | "adminListFaults"
  | "adminClearFaults"
  | "adminGetFault"
  | "adminDeleteFault"
  | "adminForceState"
  | "adminSetTier"
  | "adminRequests"
>;

/** Ids come from the URL: never let `constructor` or `__proto__` reach Object's own members. */
const own = <T>(map: Record<string, T>, id: string): T | undefined => (Object.hasOwn(map, id) ? map[id] : undefined);

export function adminHandlers(env: EmulatorEnv, requests: RequestLog): AdminHandlers {
  const state = () => env.store.data;

  return {
    adminHealth() {
      const store = env.store.health();
      return { status: store.ok ? "ok" : "degraded", version: env.settings.version, store };
    },

    adminReset() {
      env.store.replace(emptyState());
      env.workspaces.clear();
      env.faults.clear();
      requests.clearJournal();
    },

    async adminExportSnapshot() {
      await env.store.allConversations();
      const snapshot = env.store.copy();
      const workspaces: Record<string, unknown> = {};
      for (const instance of Object.values(snapshot.instances)) {
        if (instance.status !== "terminated") workspaces[instance.id] = await exportTree(env.workspaces.rootOf(instance.id));
      }
      return { ...snapshot, workspaces };
    },

    async adminImportSnapshot({ body }) {
      const { workspaces, ...rest } = body;
      // Everything is checked before anything is replaced.
      const next = parseSnapshotState(rest);
      const trees = workspaces === undefined ? undefined : parseTrees(workspaces);
      env.store.replace(next);
      // With trees, the disk becomes exactly the snapshot; without (an older snapshot), files stay.
      if (trees) env.workspaces.clear();
      for (const instance of Object.values(next.instances)) {
        if (instance.status === "terminated") continue;
        const tree = trees?.[instance.id];
        if (tree) await importTree(env.workspaces.rootOf(instance.id), tree);
        else await env.workspaces.create(instance);
      }
    },

    adminCreateFault: ({ body }) => env.faults.add(body),
    adminListFaults: () => env.faults.list(),
    adminClearFaults: () => env.faults.clear(),
    adminGetFault({ params }) {
      const rule = env.faults.get(params.fault_id);
      if (!rule) throw notFound(`Fault rule ${params.fault_id} not found.`);
      return rule;
    },
    adminDeleteFault({ params }) {
      if (!env.faults.remove(params.fault_id)) throw notFound(`Fault rule ${params.fault_id} not found.`);
    },

    adminForceState({ params, body }) {
      const instance = own(state().instances, params.instance_id);
      if (!instance || instance.status === "terminated") throw notFound(`Instance ${params.instance_id} not found.`);
      if (body.gateway_url !== undefined) instance.gateway_override = body.gateway_url.replace(/\/+$/, "");
      if (body.status === "terminated") {
        terminate(env, instance);
        const org = state().organizations[instance.organization_id];
        if (org) org.instance_ids = org.instance_ids.filter((id) => id !== instance.id);
        return instanceView(env, instance);
      }
      instance.status = body.status;
      instance.error_message = body.status === "error" ? (body.error_message ?? "Forced into error by the control plane.") : null;
      instance.ready_at = body.status === "provisioning" ? env.clock.now() + env.settings.provisionMs : null;
      instance.fail_provision = null;
      instance.updated_at = isoAt(env.clock.now());
      env.store.commit();
      return instanceView(env, instance);
    },

    adminSetTier({ params, body }) {
      const org = own(state().organizations, params.organization_id);
      if (!org) throw notFound(`Organization ${params.organization_id} not found.`);
      org.tier = body.tier;
      org.updated_at = isoAt(env.clock.now());
      env.store.commit();
      return organizationView(org);
    },

    adminRequests: () => requests.journal(),
  };
}
