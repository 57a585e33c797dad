import { z } from "zod";
import { Name, Provider, Tier, Timestamp, Uuid } from "./common.js";

export const Organization = z.object({
  id: Uuid,
  name: z.string(),
  model_providers: z.array(Provider),
  subscription_tier: Tier,
  instance_limit: z.number().int().min(0),
  instance_count: z.number().int().min(0),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Organization = z.infer<typeof Organization>;

export const SignupRequest = z.strictObject({ name: Name });
export const SignupResponse = z.object({ api_key: z.string(), organization: Organization });

export const OrganizationUpdate = z.strictObject({
  name: Name.optional(),
  // Empty string removes that provider's key.
  model_api_keys: z.partialRecord(Provider, z.string().max(1024)).optional(),
});
export type OrganizationUpdate = z.infer<typeof OrganizationUpdate>;

export const Subscription = z.object({
  tier: Tier,
  instance_limit: z.number().int().min(0),
  instance_count: z.number().int().min(0),
});
export const CheckoutRequest = z.strictObject({ tier: z.enum(["crab", "lobster"]) });
export const UrlResponse = z.object({ url: z.url() });
