/**
 * A WhatsApp channel's options: the schema the config file is checked
 * against, and the type the adapter receives (after `platform.ts` filled in
 * the auth folder's default). Both `platform.ts` and the adapter import this
 * file, so neither has to import the other.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupChatOptions, nonEmpty } from "../../vocabulary/config-fields.js";
import type { UserIdRules } from "../platform.js";

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

/**
 * WhatsApp's own spellings of a person's id, as an operator may paste them
 * into the config: a JID (`4915112345678:3@s.whatsapp.net`, `...@c.us`)
 * is its phone number's digits, any `:device` part dropped; a privacy id
 * keeps its `@lid` suffix, since its digits are not a phone number and must
 * never match one. Here, beside the schema, since the descriptor loads with the config.
 */
const PHONE_JID = /^([^@]+)@(s\.whatsapp\.net|c\.us)$/i;
const LID = /^([^@:]+)(?::\d+)?@lid$/i;
const PHONE_LIKE = /^\+?[\d\s\-().]+$/;

export const whatsappUserIds: UserIdRules = {
  normalize(id) {
    const pn = PHONE_JID.exec(id);
    if (pn?.[1] !== undefined) {
      const user = pn[1].replace(/:\d+$/, "");
      return PHONE_LIKE.test(user) && /\d/.test(user) ? user.replace(/[^\d]/g, "") : user;
    }
    const lid = LID.exec(id);
    return lid?.[1] !== undefined ? `${lid[1]}@lid` : id;
  },
};
