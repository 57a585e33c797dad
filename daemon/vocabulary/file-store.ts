/**
 * The store of reply files served by link (adapters/file-links/): one
 * interface, two implementations chosen like the rest of the state: on disk
 * below the data directory (one machine, adapters/file-links/store.ts), or in
 * the PostgreSQL state backend (several machines, state/postgres/file-links.ts)
 * so whichever node the platform's fetch reaches serves the file.
 */
import type { Readable } from "node:stream";

/** What a stored file is. Times are ms since the epoch. */
export interface FileLinkMeta {
  fileName: string;
  mimeType: string;
  size: number;
  createdAt: number;
  expiresAt: number;
}

export interface StoredFile {
  readonly fileName: string;
  readonly mimeType: string;
  readonly data: Buffer;
}

export interface FileLink {
  token: string;
  expiresAt: number;
}

/** A live link's file: what it is, and its bytes from `start` to `end` (inclusive) as a stream. */
export interface FoundFile {
  meta: FileLinkMeta;
  read(start: number, end: number): Readable;
}

/** One channel's files. */
export interface FileStore {
  /** Keeps `file` for `purpose` and returns its link (the same token for the same purpose and bytes). */
  put(purpose: string, file: StoredFile): Promise<FileLink>;
  /** The live file behind `token`; undefined for a token that is malformed, unknown or expired. */
  find(token: string): Promise<FoundFile | undefined>;
  /** Deletes every expired file; resolves with how many links ended. */
  sweep(): Promise<number>;
  /** Stops the sweep (the files stay for the next life). */
  close(): void;
}

export interface FileStoreOptions {
  /** The channel's platform and account: one store each. */
  platform: string;
  accountId: string;
  ttlMs: number;
  maxTotalBytes: number;
  /** This store sweeps expired files (the channel's owner's; a node that only serves links does not). */
  sweeps: boolean;
}

/** Opens one channel's store in the backend the state uses. */
export interface FileStoreBackend {
  open(options: FileStoreOptions): Promise<FileStore>;
}
