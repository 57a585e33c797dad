/**
 * The terminal platform's descriptor: one local person on the process's own
 * streams (config.ts); the adapter is loaded only when a terminal channel is enabled.
 */
import { channelSubject } from "../../vocabulary/check-result.js";
import { definePlatform } from "../platform.js";
import { terminalChannelSchema, type TerminalChannelConfig } from "./config.js";

export const terminalPlatform = definePlatform({
  type: "terminal",
  name: "Terminal",
  // The process's own terminal: it cannot move to another node.
  machineBound: true,
  schema: terminalChannelSchema,
  finalize: (channel, { id }): TerminalChannelConfig => ({
    ...channel,
    id,
    access: channel.access ?? { mode: "allowlist", users: [channel.userId], owners: [], groups: {}, allowUnlistedGroups: false },
  }),
  secrets: () => [],
  check: async (channel) => ({ status: "ok", subject: channelSubject(channel), message: "nothing to check" }),
  load: () => import("./index.js"),
  async create(channel, deps) {
    const { createTerminalAdapter } = await import("./index.js");
    return createTerminalAdapter({ input: deps.stdin ?? process.stdin, output: deps.stdout ?? process.stdout, config: channel, clock: deps.clock });
  },
});
