/**
 * The terminal channel's config: one local person on the process's own streams. With no
 * `access` block only that person (`userId`) may talk.
 */
import { z } from "zod";
import { accessSchema, channelCommon, idString, nonEmpty, type AccessConfig, streamingSchema } from "../../vocabulary/config-fields.js";

export const terminalChannelSchema = z.strictObject({
  type: z.literal("terminal").describe('A chat in the terminal the daemon runs in: "terminal".'),
  ...channelCommon,
  access: accessSchema.optional().describe("Who may talk. Absent: the local person (`userId`) and only they."),
  userId: idString.default("local").describe('The local person\'s user id, as access rules and sessions see it. Default "local".'),
  userName: nonEmpty.optional().describe("The local person's display name, passed to the agent with each message. Default: none."),
  prompt: z.string().default("you> ").describe('The input prompt on a TTY. Default "you> ".'),
  streaming: streamingSchema,
});

export type TerminalChannelConfig = Omit<z.output<typeof terminalChannelSchema>, "id" | "access"> & { id: string; access: AccessConfig };

export const TERMINAL_PLATFORM = "terminal";
