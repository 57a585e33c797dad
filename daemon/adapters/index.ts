/**
 * Builds the chat adapters the config asks for, each through its platform's
 * descriptor (registry.ts). Platform libraries are imported only when a
 * channel of theirs is enabled, so a terminal-only daemon never loads
 * Baileys or discord.js.
 */
import type { Readable, Writable } from "node:stream";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import type { AdapterStateStore, ChatAdapter, CredentialStore, EventInbox } from "../vocabulary/adapter.js";
import type { FileStoreBackend } from "../vocabulary/file-store.js";
import type { FinalChannel, PlatformDeps } from "./platform.js";
import { platforms } from "./registry.js";

/** What building adapters reads of the daemon's config (the config sits above this folder). */
export interface AdapterSettings<C extends FinalChannel = FinalChannel> {
  dataDir: string;
  attachments: { maxBytes: number };
  channels: readonly C[];
}

export interface BuildAdapterDeps<C extends FinalChannel = FinalChannel> {
  logger: Logger;
  clock: Clock;
  /** Durable key-values for one adapter (namespaced by the caller). */
  stateFor(channel: C): AdapterStateStore;
  /** Several machines: the account's credentials in the state backend (else the adapter keeps its own files). */
  credentialsFor?(channel: C): CredentialStore;
  /** Several machines: the events other nodes kept for the account. */
  inboxFor?(channel: C): EventInbox;
  /** Several machines: the state backend's store of reply files served by link. */
  fileStores?: FileStoreBackend;
  /** Counts a send of the channel's by kind (/metrics). */
  countSend?(channel: C, kind: string): void;
  /** Tests: builds the adapter instead of its platform (a fake socket, say), from the same deps. */
  create?(channel: C, deps: PlatformDeps): Promise<ChatAdapter> | undefined;
  /** The terminal channel's streams (default stdin/stdout). */
  stdin?: Readable;
  stdout?: Writable;
}

export async function buildAdapters<C extends FinalChannel>(config: AdapterSettings<C>, deps: BuildAdapterDeps<C>): Promise<ChatAdapter[]> {
  const adapters: ChatAdapter[] = [];
  for (const channel of config.channels) if (channel.enabled) adapters.push(await buildAdapter(config, channel, deps));
  return adapters;
}

/** Imports the adapter modules of the enabled channels, building nothing (see `PlatformSpec.load`). */
export async function loadAdapterModules(channels: readonly FinalChannel[]): Promise<void> {
  await Promise.all(channels.filter((c) => c.enabled).map((c) => platforms.map((p) => p.load(c)).find((loading) => loading !== undefined)));
}

/** The adapter of one channel (enabled or not: the caller decides). */
export async function buildAdapter<C extends FinalChannel>(config: AdapterSettings<C>, channel: C, deps: BuildAdapterDeps<C>): Promise<ChatAdapter> {
  const platformDeps: PlatformDeps = {
    logger: deps.logger.child({ channel: channel.id, type: channel.type }),
    state: deps.stateFor(channel),
    dataDir: config.dataDir,
    clock: deps.clock,
    maxAttachmentBytes: config.attachments.maxBytes,
    ...(deps.stdin ? { stdin: deps.stdin } : {}),
    ...(deps.stdout ? { stdout: deps.stdout } : {}),
    ...(deps.credentialsFor ? { credentials: deps.credentialsFor(channel) } : {}),
    ...(deps.inboxFor ? { inbox: deps.inboxFor(channel) } : {}),
    ...(deps.fileStores ? { fileStores: deps.fileStores } : {}),
    ...(deps.countSend ? { countSend: (kind: string) => deps.countSend?.(channel, kind) } : {}),
  };
  const adapter = deps.create?.(channel, platformDeps) ?? platforms.map((p) => p.create(channel, platformDeps)).find((a) => a !== undefined);
  if (!adapter) throw new Error(`no platform for channel type "${channel.type}"`);
  return adapter;
}
