/**
 * The model scripts in force, by scope: one global script, one per sandbox
 * and one per instance. A request sees its instance's rules first, then its
 * sandbox's, then the global ones: the narrower scope wins, so a test can
 * override what its sandbox answers for one instance.
 */
import type { ModelScript, ScriptRule } from "./schema.js";

export type ScriptScope = { kind: "global" } | { kind: "sandbox"; sandboxId: string } | { kind: "instance"; instanceId: string };

/** Where a request to the model comes from: its instance and, when the instance's organization is in one, its sandbox. */
export interface ScriptTarget {
  instanceId: string;
  sandboxId?: string;
}

/** A rule as the matcher sees it: its display name and how many times it may still fire. */
export interface ActiveRule {
  rule: ScriptRule;
  /** `rule N` (from 1, in its script) unless the rule names itself. */
  name: string;
  /** `global`, `sandbox` or `instance`. */
  scope: ScriptScope["kind"];
}

export interface ScriptRegistry {
  /** Replaces the scope's script (counts of `times` start again). */
  set(scope: ScriptScope, script: ModelScript): void;
  get(scope: ScriptScope): ModelScript | undefined;
  clear(scope: ScriptScope): void;
  /** The rules a request to this instance (in this sandbox) may fire at `now` (epoch ms, the emulator's clock), in the order they are tried. */
  rulesFor(target: ScriptTarget, now: number): ActiveRule[];
  /**
   * Counts a firing at `now`; a rule with `times` steps aside once it has fired that often, a
   * `hold` error once its `retry_after` has passed since its first firing.
   */
  fired(active: ActiveRule, now: number): void;
  /** How many times each rule of the scope fired, by name. */
  hits(scope: ScriptScope): Record<string, number>;
}

const keyOf = (scope: ScriptScope): string => {
  if (scope.kind === "global") return "global";
  return scope.kind === "sandbox" ? `sandbox\u0000${scope.sandboxId}` : `instance\u0000${scope.instanceId}`;
};

export function createScriptRegistry(): ScriptRegistry {
  /**
   * Scope key -> its script and, by rule index, how often each rule fired and
   * when it first did (epoch ms; undefined until it fires).
   */
  const scripts = new Map<string, { script: ModelScript; active: ActiveRule[]; hits: number[]; firstAt: (number | undefined)[] }>();

  const install = (scope: ScriptScope, script: ModelScript) => {
    const active = script.rules.map((rule, i) => ({ rule, name: rule.name ?? `rule ${i + 1}`, scope: scope.kind }));
    scripts.set(keyOf(scope), { script, active, hits: active.map(() => 0), firstAt: active.map(() => undefined) });
  };
  const usable = (key: string, now: number): ActiveRule[] => {
    const entry = scripts.get(key);
    if (!entry) return [];
    return entry.active.filter((a, i) => {
      if (a.rule.times !== undefined && entry.hits[i]! >= a.rule.times) return false;
      const error = a.rule.answer.error;
      const since = entry.firstAt[i];
      // 1 ms of slack: clocks and timers round to the millisecond, so a client that waited
      // exactly `retry-after-ms` may arrive a fraction of one early.
      return !(error?.hold && since !== undefined && now >= since + (error.retry_after ?? 0) * 1000 - 1);
    });
  };

  return {
    set: install,
    get: (scope) => scripts.get(keyOf(scope))?.script,
    clear: (scope) => void scripts.delete(keyOf(scope)),
    rulesFor: ({ instanceId, sandboxId }, now) => [
      ...usable(keyOf({ kind: "instance", instanceId }), now),
      ...(sandboxId === undefined ? [] : usable(keyOf({ kind: "sandbox", sandboxId }), now)),
      ...usable("global", now),
    ],
    fired(active, now) {
      for (const entry of scripts.values()) {
        const at = entry.active.indexOf(active);
        if (at === -1) continue;
        entry.hits[at]!++;
        entry.firstAt[at] ??= now;
      }
    },
    hits(scope) {
      const entry = scripts.get(keyOf(scope));
      return Object.fromEntries(entry ? entry.active.map((a, i) => [a.name, entry.hits[i]!]) : []);
    },
  };
}
