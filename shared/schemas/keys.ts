import { z } from "zod";
import { Name, Permission, Timestamp, Uuid } from "./common.js";

export const KeyGrant = z.object({ instance_id: z.string(), permissions: z.array(Permission) });

export const ScopedKey = z.object({
  id: Uuid,
  name: z.string(),
  key_prefix: z.literal("svc_sk_"),
  is_active: z.boolean(),
  expires_at: Timestamp.nullable(),
  last_used_at: Timestamp.nullable(),
  created_at: Timestamp,
  instances: z.array(KeyGrant),
});
export type ScopedKey = z.infer<typeof ScopedKey>;

export const KeyCreateRequest = z.strictObject({
  name: Name,
  instance_ids: z.array(Uuid).min(1).max(100),
  permissions: z.array(Permission).min(1),
  expires_at: z.iso.datetime({ offset: true }).optional(),
});
export const KeyCreated = ScopedKey.extend({ raw_key: z.string() });
