/**
 * Builds the chat adapters the config asks for. Platform libraries are
 * imported only when a channel of theirs is enabled, so a terminal-only
 * daemon never loads Baileys or discord.js.
 */
import type { Readable, Writable } from "node:stream";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { ChannelConfig, DaemonConfig } from "../config/schema.js";
import type { AdapterDeps, AdapterStateStore, ChatAdapter } from "../core/adapter.js";

export interface BuildAdapterDeps {
  logger: Logger;
  clock: Clock;
  /** Durable key-values for one adapter (namespaced by the caller). */
  stateFor(channel: ChannelConfig): AdapterStateStore;
  /** The terminal channel's streams (default stdin/stdout). */
  stdin?: Readable;
  stdout?: Writable;
}

export async function buildAdapters(config: DaemonConfig, deps: BuildAdapterDeps): Promise<ChatAdapter[]> {
  const adapters: ChatAdapter[] = [];
  for (const channel of config.channels) {
    if (!channel.enabled) continue;
    const adapterDeps: AdapterDeps = {
      logger: deps.logger.child({ channel: channel.id, type: channel.type }),
      state: deps.stateFor(channel),
      dataDir: config.dataDir,
      clock: deps.clock,
      maxAttachmentBytes: config.attachments.maxBytes,
    };
    switch (channel.type) {
      case "terminal": {
        const { createTerminalAdapter } = await import("./terminal.js");
        adapters.push(createTerminalAdapter({ input: deps.stdin ?? process.stdin, output: deps.stdout ?? process.stdout, config: channel, clock: deps.clock }));
        break;
      }
      case "telegram": {
        const { createTelegramAdapter } = await import("./telegram/index.js");
        adapters.push(createTelegramAdapter(channel, adapterDeps));
        break;
      }
      case "discord": {
        const { createDiscordAdapter } = await import("./discord/index.js");
        adapters.push(createDiscordAdapter(channel, adapterDeps));
        break;
      }
      case "whatsapp": {
        const { createWhatsAppAdapter } = await import("./whatsapp/index.js");
        adapters.push(createWhatsAppAdapter(channel, adapterDeps));
        break;
      }
    }
  }
  return adapters;
}
