import { z } from "zod";
import { JsonObject, QueryBoolean, StringMap } from "./common.js";

const EnvMap = z.record(
  z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .max(128),
  z.string().max(4096),
);

export const SkillListItem = z.object({
  name: z.string(),
  description: z.string(),
  source: z.string(),
  ready: z.boolean(),
});
export const SkillDetail = SkillListItem.extend({ path: z.string() });
export const SkillListQuery = z.object({ eligible_only: QueryBoolean.optional() });
export const SkillInstallRequest = z.strictObject({
  slug: z.string().min(1).max(128),
  env: EnvMap.optional(),
});
export const SkillInstallResult = z.object({
  skill: z.string(),
  status: z.enum(["installed", "installed_missing_env"]),
  output: z.string(),
  env_applied: StringMap.optional(),
  required_env: z.array(z.string()).optional(),
  message: z.string(),
});
export const SkillUpdateRequest = z.strictObject({
  enabled: z.boolean().optional(),
  env: EnvMap.optional(),
  config: JsonObject.optional(),
});
