/**
 * The rules of an installed skill, whoever applies them (the skill routes, a
 * fixture): where it lives in the workspace, when it is ready, and what
 * `runtime.json` says about it (variable names only, values redacted).
 */
import type { RegistrySkill } from "../skills/registry.js";
import type { SkillRecord } from "../store/state.js";
import { REDACTED } from "../workspace/redact.js";

export const skillPath = (name: string): string => `skills/${name}`;

export function isReady(skill: RegistrySkill | undefined, record: SkillRecord | undefined): boolean {
  if (!record?.enabled) return false;
  return (skill?.requiredEnv ?? []).every((name) => record.env[name] !== undefined);
}

/** The variables the skill needs that the record does not set. */
export const missingEnv = (skill: RegistrySkill, record: SkillRecord) => skill.requiredEnv.filter((name) => record.env[name] === undefined);

/** What `runtime.json` says about an installed skill: env names only, values redacted. */
export const runtimeEntry = (record: SkillRecord) => ({
  enabled: record.enabled,
  env: Object.fromEntries(Object.keys(record.env).map((name) => [name, REDACTED])),
  config: record.config,
});
