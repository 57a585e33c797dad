/**
 * Files out for a platform that takes them only by public URL (LINE, Google
 * Chat): a channel with `file_links.public_base_url` keeps each reply file in
 * its store (store.ts, below the daemon's data directory) and serves it on its
 * own endpoint (route.ts, a route of ../webhook.ts) at
 * `<public_base_url>/<token>/<name>` until the link expires. The adapter then
 * sends the platform that URL in whatever form the platform shows it.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import { type FileLimits, type OutboundFile, SendError } from "../../vocabulary/adapter.js";
import type { FileStore, FileStoreBackend } from "../../vocabulary/file-store.js";
import type { PrefixRoute } from "../webhook.js";
import { bytesOfMb, type FileLinksConfig, filesPathOf } from "./config.js";
import { fileRoute } from "./route.js";
import { diskFileStores } from "./store.js";

export { type FileLinksConfig, fileLinksSchema } from "./config.js";

/** A file's public link. */
export interface PublishedFile {
  url: string;
  expiresAt: number;
}

export interface FileLinks {
  /** The route the channel's endpoint serves (`<path of public_base_url>/...`); 404 until `open`. */
  readonly route: PrefixRoute;
  /** The largest file of each kind served. */
  readonly limits: FileLimits;
  /** Opens the store (the links an earlier life made are served again). */
  open(): Promise<void>;
  /** Keeps `file` for `purpose` (same purpose and bytes: same URL) and gives its public URL. */
  publish(purpose: string, file: OutboundFile): Promise<PublishedFile>;
  /** Stops the sweep; the files stay for the next life. */
  close(): void;
}

export interface FileLinksDeps {
  config: FileLinksConfig & { public_base_url: string };
  /** The daemon's data directory; the files go below it. */
  dataDir: string;
  /** e.g. "line", and the account id: one folder per channel. */
  platform: string;
  accountId: string;
  clock: Clock;
  log: Logger;
  /** Several machines: the state backend's store (any node serves any link). Absent: files on disk below `dataDir`. */
  backend?: FileStoreBackend;
}

/** The longest URL a platform is given (LINE takes 2,000 characters). */
const URL_MAX = 2000;

/** The channel's file links, when it has a `public_base_url`. */
export function fileLinksOf(deps: Omit<FileLinksDeps, "config"> & { config: FileLinksConfig }): FileLinks | undefined {
  const { public_base_url } = deps.config;
  return public_base_url === undefined ? undefined : createFileLinks({ ...deps, config: { ...deps.config, public_base_url } });
}

export function createFileLinks(deps: FileLinksDeps): FileLinks {
  const { config } = deps;
  let store: FileStore | undefined;
  const backend = deps.backend ?? diskFileStores(deps);
  const max = Math.min(bytesOfMb(config.max_file_mb), bytesOfMb(config.max_total_mb));
  const base = config.public_base_url.replace(/\/+$/, "");
  return {
    route: fileRoute(filesPathOf(config.public_base_url), () => store, deps.clock),
    limits: { photo: max, voice: max, document: max },
    async open() {
      store ??= await backend.open({ ...storeOptionsOf(deps), sweeps: true });
    },
    async publish(purpose, file) {
      if (!store) throw new SendError("the channel's file store is not open", { permanent: false });
      const { token, expiresAt } = await store.put(purpose, { fileName: file.fileName, mimeType: file.mimeType, data: file.data });
      const named = `${base}/${token}/${encodeURIComponent(file.fileName)}`;
      return { url: named.length <= URL_MAX ? named : `${base}/${token}/file`, expiresAt };
    },
    close() {
      store?.close();
      store = undefined;
    },
  };
}

const storeOptionsOf = (deps: FileLinksDeps) => ({
  platform: deps.platform,
  accountId: deps.accountId,
  ttlMs: deps.config.ttl_hours * 60 * 60 * 1000,
  maxTotalBytes: bytesOfMb(deps.config.max_total_mb),
});

/** A node that serves a channel's links without owning its account (several machines: every node's endpoint). */
export interface ServedFiles {
  readonly route: PrefixRoute;
  open(): Promise<void>;
  close(): void;
}

/** The route of a channel's links on a node that may not own it; undefined without `public_base_url`. */
export function servedFilesOf(
  deps: Omit<FileLinksDeps, "config" | "dataDir"> & { config: FileLinksConfig; backend: FileStoreBackend },
): ServedFiles | undefined {
  const { public_base_url } = deps.config;
  if (public_base_url === undefined) return undefined;
  const full = { ...deps, dataDir: "", config: { ...deps.config, public_base_url } };
  let store: FileStore | undefined;
  return {
    route: fileRoute(filesPathOf(public_base_url), () => store, deps.clock),
    async open() {
      store ??= await deps.backend.open({ ...storeOptionsOf(full), sweeps: false });
    },
    close() {
      store?.close();
      store = undefined;
    },
  };
}

/** The purpose a reply file is kept for: the same reply's same file is one link. */
export const purposeOf = (accountId: string, chatId: string, replyTo: string | undefined, path: string): string =>
  JSON.stringify([accountId, chatId, replyTo ?? "", path]);
