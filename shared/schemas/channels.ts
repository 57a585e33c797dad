import { z } from "zod";
import { JsonObject } from "./common.js";

export const ConnectionType = z.enum(["token", "interactive"]);

export const ChannelInfo = z.object({
  channel: z.string(),
  connection_type: ConnectionType,
  required_fields: z.record(z.string(), z.string()),
});
export const ChannelListItem = z.object({
  channel: z.string(),
  connection_type: ConnectionType,
  enabled: z.boolean(),
});
export const ChannelConnectRequest = z.strictObject({
  config: z.record(z.string().min(1).max(128), z.string().max(4096)),
});
export const ChannelConnectResult = z.object({
  channel: z.string(),
  status: z.enum(["connected", "awaiting_scan"]),
  qr_data: z.string().optional(),
  qr_image_base64: z.string().optional(),
  message: z.string().optional(),
});
export const ChannelStatus = z.object({
  channel: z.string(),
  enabled: z.boolean(),
  connected: z.boolean(),
  details: JsonObject,
});
export const ChannelPairRequest = z.strictObject({ code: z.string().min(1).max(64) });
export const ChannelPairResult = z.object({
  channel: z.string(),
  code: z.string(),
  status: z.literal("approved"),
  output: z.string(),
});
