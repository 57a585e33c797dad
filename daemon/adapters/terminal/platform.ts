/**
 * The terminal platform's descriptor: one local person on the process's own
 * streams. With no `access` block only that person (`userId`) may talk.
 */
import { z } from "zod";
import { channelSubject } from "../../check/result.js";
import { accessSchema, channelCommon, idString, nonEmpty, type AccessConfig, streamingSchema } from "../../config/fields.js";
import { definePlatform } from "../platform.js";

export const terminalChannelSchema = z.strictObject({
  type: z.literal("terminal"),
  ...channelCommon,
  /** Absent: the local user (and only they) may talk. */
  access: accessSchema.optional(),
  userId: idString.default("local"),
  userName: nonEmpty.optional(),
  prompt: z.string().default("you> "),
  streaming: streamingSchema,
});

export type TerminalChannelConfig = Omit<z.output<typeof terminalChannelSchema>, "id" | "access"> & { id: string; access: AccessConfig };

export const terminalPlatform = definePlatform({
  type: "terminal",
  schema: terminalChannelSchema,
  finalize: (channel, { id }): TerminalChannelConfig => ({
    ...channel,
    id,
    access: channel.access ?? { mode: "allowlist", users: [channel.userId], groups: {}, allowUnlistedGroups: false },
  }),
  secrets: () => [],
  check: async (channel) => ({ status: "ok", subject: channelSubject(channel), message: "nothing to check" }),
  async create(channel, deps) {
    const { createTerminalAdapter } = await import("./index.js");
    return createTerminalAdapter({ input: deps.stdin ?? process.stdin, output: deps.stdout ?? process.stdout, config: channel, clock: deps.clock });
  },
});
