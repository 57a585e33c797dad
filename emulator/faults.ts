/**
 * Fault rules of the control plane: each matches a target (the gateway hop,
 * the API itself, or provisioning), optionally an instance, a path prefix and a
 * method, fires with a probability from the emulator's seeded randomness, and
 * retires after `times` hits.
 */
import type { z } from "zod";
import type { Random } from "../shared/random.js";
import { uuid } from "../shared/random.js";
import { ApiError } from "./errors.js";
import type { FaultRule, FaultRuleRequest } from "../shared/schemas/admin.js";

export interface FaultMatch {
  target: FaultRule["target"];
  instanceId?: string;
  path?: string;
  method?: string;
  /** The sandbox of the request; a rule fires only in its own sandbox (rules of none: outside sandboxes). */
  sandboxId?: string;
}

export interface FaultRegistry {
  /** `sandboxId`: the rule fires only on that sandbox's requests. */
  add(rule: z.infer<typeof FaultRuleRequest>, sandboxId?: string): FaultRule;
  /** Removes a sandbox's rules. */
  removeSandbox(sandboxId: string): void;
  list(): FaultRule[];
  get(id: string): FaultRule | undefined;
  remove(id: string): boolean;
  clear(): void;
  /** The first live rule that matches and fires; counts the hit. */
  take(match: FaultMatch): FaultRule | undefined;
}

export function createFaultRegistry(random: Random): FaultRegistry {
  const rules = new Map<string, FaultRule>();
  /** Rule id -> its sandbox, for rules added to one. */
  const sandboxOf = new Map<string, string>();
  const matches = (rule: FaultRule, m: FaultMatch) =>
    rule.target === m.target &&
    sandboxOf.get(rule.id) === m.sandboxId &&
    (rule.instance_id === undefined || rule.instance_id === m.instanceId) &&
    (rule.path === undefined || m.path?.startsWith(rule.path) === true) &&
    (rule.method === undefined || rule.method.toUpperCase() === m.method?.toUpperCase());

  return {
    add(request, sandboxId) {
      if (request.after_deltas !== undefined && request.error !== "reset") {
        throw new ApiError(422, [{ loc: ["body", "after_deltas"], msg: 'after_deltas needs error: "reset"', type: "value_error" }]);
      }
      const rule: FaultRule = { ...request, id: uuid(random), remaining: request.times ?? null, hits: 0 };
      rules.set(rule.id, rule);
      if (sandboxId !== undefined) sandboxOf.set(rule.id, sandboxId);
      return rule;
    },
    removeSandbox(sandboxId) {
      for (const [id, owner] of sandboxOf) {
        if (owner === sandboxId) {
          rules.delete(id);
          sandboxOf.delete(id);
        }
      }
    },
    list: () => [...rules.values()],
    get: (id) => rules.get(id),
    remove: (id) => {
      sandboxOf.delete(id);
      return rules.delete(id);
    },
    clear: () => {
      rules.clear();
      sandboxOf.clear();
    },
    take(m) {
      if (rules.size === 0) return undefined;
      for (const rule of rules.values()) {
        if (!matches(rule, m)) continue;
        if (rule.probability !== undefined && random.float() >= rule.probability) continue;
        rule.hits++;
        if (rule.remaining !== null && --rule.remaining <= 0) {
          rules.delete(rule.id);
          sandboxOf.delete(rule.id);
        }
        return rule;
      }
      return undefined;
    },
  };
}
