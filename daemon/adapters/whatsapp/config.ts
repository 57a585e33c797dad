/**
 * A WhatsApp channel's options: the schema the config file is checked
 * against, and the type the adapter receives (after `platform.ts` filled in
 * the auth folder's default). Both `platform.ts` and the adapter import this
 * file, so neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, nonEmpty } from "../../vocabulary/config-fields.js";

export const whatsappChannelSchema = z.strictObject({
  type: z.literal("whatsapp").describe('A WhatsApp account linked as a device (Baileys): "whatsapp".'),
  ...channelCommon,
  ...groupChatOptions,
  access: accessSchema.prefault({}),
  authDir: nonEmpty.optional().describe("Folder of the link to the phone (Baileys' keys; owner-only). Default: `<dataDir>/whatsapp/<id>`."),
  printQr: z.boolean().default(true).describe("Draw the pairing QR code on stdout when the channel is not linked yet. Default: true."),
  requireMention: z.boolean().default(true).describe("In groups, answer only when mentioned or replied to. Default: true."),
  readReceipts: z.boolean().default(true).describe("Mark admitted senders' messages as read once they are journaled. Default: true."),
});

/** A channel as the adapter gets it: `id` and `authDir` always set. */
export type WhatsAppChannelConfig = Omit<z.output<typeof whatsappChannelSchema>, "id" | "authDir"> & { id: string; authDir: string };
