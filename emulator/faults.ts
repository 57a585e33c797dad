/**
 * Fault rules of the control plane: each matches a target (the gateway hop,
 * the API itself, or provisioning), optionally an instance, a path prefix and a
 * method, fires with a probability from the emulator's seeded randomness, and
 * retires after `times` hits.
 */
import type { z } from "zod";
import type { Random } from "../shared/random.js";
import { uuid } from "../shared/random.js";
import type { FaultRule, FaultRuleRequest } from "../shared/schemas/admin.js";

export interface FaultMatch {
  target: FaultRule["target"];
  instanceId?: string;
  path?: string;
  method?: string;
}

export interface FaultRegistry {
  add(rule: z.infer<typeof FaultRuleRequest>): FaultRule;
  list(): FaultRule[];
  get(id: string): FaultRule | undefined;
  remove(id: string): boolean;
  clear(): void;
  /** The first live rule that matches and fires; counts the hit. */
  take(match: FaultMatch): FaultRule | undefined;
}

export function createFaultRegistry(random: Random): FaultRegistry {
  const rules = new Map<string, FaultRule>();
  const matches = (rule: FaultRule, m: FaultMatch) =>
    rule.target === m.target &&
    (rule.instance_id === undefined || rule.instance_id === m.instanceId) &&
    (rule.path === undefined || m.path?.startsWith(rule.path) === true) &&
    (rule.method === undefined || rule.method.toUpperCase() === m.method?.toUpperCase());

  return {
    add(request) {
      const rule: FaultRule = { ...request, id: uuid(random), remaining: request.times ?? null, hits: 0 };
      rules.set(rule.id, rule);
      return rule;
    },
    list: () => [...rules.values()],
    get: (id) => rules.get(id),
    remove: (id) => rules.delete(id),
    clear: () => rules.clear(),
    take(m) {
      if (rules.size === 0) return undefined;
      for (const rule of rules.values()) {
        if (!matches(rule, m)) continue;
        if (rule.probability !== undefined && random.float() >= rule.probability) continue;
        rule.hits++;
        if (rule.remaining !== null && --rule.remaining <= 0) rules.delete(rule.id);
        return rule;
      }
      return undefined;
    },
  };
}
