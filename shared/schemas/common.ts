import { z } from "zod";

/** Shapes used across resources; every other schema file builds on these. */
export const Uuid = z.uuid();
export const Timestamp = z.iso.datetime();
/** A lone UTF-16 surrogate cannot be encoded as UTF-8: such a string is not text. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export const Name = z
  .string()
  .min(1)
  .max(128)
  .refine((s) => !LONE_SURROGATE.test(s), "Must be valid Unicode (no lone surrogate)");

export const PROVIDERS = ["anthropic", "openai", "gemini"] as const;
export const Provider = z.enum(PROVIDERS);
export type Provider = z.infer<typeof Provider>;

export const PERMISSIONS = ["read", "interact", "configure", "files", "channels"] as const;
export const Permission = z.enum(PERMISSIONS);
export type Permission = z.infer<typeof Permission>;

export const TIERS = ["shrimp", "crab", "lobster"] as const;
export const Tier = z.enum(TIERS);
export type Tier = z.infer<typeof Tier>;
export const TIER_LIMITS: Record<Tier, number> = { shrimp: 1, crab: 10, lobster: 500 };

export const ValidationIssue = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
export const ErrorBody = z.object({
  detail: z.union([z.string(), z.array(ValidationIssue), z.object({ error: z.string() })]),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Query booleans arrive as text. */
export const QueryBoolean = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

export const StringMap = z.record(z.string(), z.string());
export const JsonObject = z.record(z.string(), z.unknown());
