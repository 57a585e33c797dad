import { z } from "zod";
import { JsonObject, Name, Provider, Timestamp, Uuid } from "./common.js";

export const INSTANCE_STATUSES = ["provisioning", "running", "stopped", "terminated", "error"] as const;
export const InstanceStatus = z.enum(INSTANCE_STATUSES);
export type InstanceStatus = z.infer<typeof InstanceStatus>;

export const Instance = z.object({
  id: Uuid,
  organization_id: Uuid,
  name: z.string(),
  status: InstanceStatus,
  model_provider: Provider,
  sandbox_provider: z.string(),
  sandbox_id: z.string(),
  gateway_url: z.url(),
  runtime_version: z.string(),
  runtime_config: JsonObject.nullable(),
  region: z.string().nullable(),
  error_message: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Instance = z.infer<typeof Instance>;

const Label = z.string().min(1).max(64);

export const InstanceCreateRequest = z.strictObject({
  name: Name,
  model_provider: Provider.optional(),
  sandbox_provider: Label.optional(),
  runtime_version: Label.optional(),
  runtime_config: JsonObject.optional(),
  region: Label.optional(),
});
export const InstanceUpdateRequest = z.strictObject({
  name: Name.optional(),
  runtime_config: JsonObject.nullable().optional(),
});
export const InstanceStatusView = z.object({ id: Uuid, status: InstanceStatus, gateway_url: z.url() });
