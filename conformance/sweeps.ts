/**
 * The undo steps behind `Cleanup`: each asks the server what is there now and
 * removes what carries the run's prefix (or puts back what the run changed),
 * so it is right however far the run got and whichever answers were lost.
 * They use their own HTTP client, not the run's: the run's is aborted by a signal.
 */
import type { Cleanup } from "./check.js";
import type { CleanupLedger } from "./cleanup.js";
import type { Exchange, Http } from "./exchange.js";

const ok = (ex: Exchange, ...statuses: number[]): Exchange => {
  if (!statuses.includes(ex.status)) throw new Error(`${ex.method} ${ex.path} answered ${ex.status}`);
  return ex;
};

const named = (json: unknown, prefix: string): { id: string; active: boolean }[] =>
  (Array.isArray(json) ? json : []).flatMap((item: unknown) => {
    if (!item || typeof item !== "object") return [];
    const { id, name, is_active } = item as Record<string, unknown>;
    return typeof id === "string" && typeof name === "string" && name.startsWith(prefix) ? [{ id, active: is_active !== false }] : [];
  });

export function createCleanup(http: Http, ledger: CleanupLedger, prefix: string): Cleanup {
  return {
    instances: () =>
      ledger.add({
        what: `instances named ${prefix}*`,
        async undo(signal) {
          const listed = ok(await http.call("listInstances", {}, signal), 200);
          // 404: gone already (deleted by a check, or by an attempt whose answer was lost).
          for (const { id } of named(listed.json, prefix)) ok(await http.call("deleteInstance", { params: { instance_id: id } }, signal), 204, 404);
          const left = named(ok(await http.call("listInstances", {}, signal), 200).json, prefix);
          if (left.length) throw new Error(`still listed after delete: ${left.map((i) => i.id).join(", ")}`);
        },
      }),
    keys: () =>
      ledger.add({
        what: `scoped keys named ${prefix}*`,
        async undo(signal) {
          const listed = ok(await http.call("listKeys", {}, signal), 200);
          for (const { id, active } of named(listed.json, prefix)) {
            if (active) ok(await http.call("revokeKey", { params: { key_id: id } }, signal), 204, 404);
          }
        },
      }),
    restoreName: (name) =>
      ledger.add({
        what: "the organization's name",
        async undo(signal) {
          ok(await http.call("updateOrganization", { body: { name } }, signal), 200);
        },
      }),
    removeProvider: (provider) =>
      ledger.add({
        what: `the organization's ${provider} key`,
        async undo(signal) {
          ok(await http.call("updateOrganization", { body: { model_api_keys: { [provider]: "" } } }, signal), 200);
        },
      }),
  };
}
