/**
 * Reply files kept on disk for a platform that fetches them by URL, each
 * under a capability token: 256 bits of HMAC-SHA256, keyed by a secret kept
 * beside the files, over what the file is for (the adapter's purpose: account,
 * chat, message answered, path) and its bytes. The same file sent again for
 * the same purpose (a retry, or the next life after a kill -9) gets the same
 * token, so the platform's own dedupe (LINE's retry key, Chat's request id)
 * still sees one message. Only the token's SHA-256 names the stored file: the
 * folder says nothing a reader could turn into a URL, and a lookup is by hash
 * (no comparison a clock could time).
 *
 * Durable: the bytes, then a small JSON of what they are (name, type, size,
 * expiry) are written atomically; a restart reads the JSON files back and
 * serves the links until they expire. A link past its expiry is not served
 * and its files are deleted (by the sweep, and by a lookup that finds it
 * expired). Disk is bounded: past `maxTotalBytes` the links closest to expiry
 * end early. The writes (keeping a file, making room, deleting an expired
 * one) run one at a time, so files kept at the same time each count the
 * other's bytes, and a link renewed as it expires is not deleted under it.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock, Timer } from "../../../shared/clock.js";
import { writeFileAtomic } from "../../../shared/durable-files.js";
import { pathComponent } from "../../../shared/util/names.js";
import { createSerialQueue } from "../../helpers/retry.js";
import type { FileLink, FileLinkMeta, FileStore, FileStoreBackend, FoundFile, StoredFile } from "../../vocabulary/file-store.js";

export type { FileLink, FileLinkMeta, FileStore, FoundFile, StoredFile } from "../../vocabulary/file-store.js";

/** What a token looks like in a URL: 32 bytes, base64url, no padding. */
export const TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** How often expired files are looked for at most. */
const SWEEP_EVERY_MS = 10 * 60 * 1000;

const Meta = z.strictObject({
  fileName: z.string().min(1),
  mimeType: z.string().min(1),
  size: z.number().int().min(0),
  createdAt: z.number(),
  expiresAt: z.number(),
});

export interface FileLinkStoreOptions {
  /** The folder the files are kept in (made when missing). */
  dir: string;
  clock: Clock;
  ttlMs: number;
  maxTotalBytes: number;
  log: Logger;
  /** The key's bytes when first made (default: the system's CSPRNG). */
  randomBytes?: (n: number) => Buffer;
}

/** One machine: each channel's files in a folder of its own below the data directory. */
export function diskFileStores(deps: { dataDir: string; clock: Clock; log: Logger }): FileStoreBackend {
  return {
    open: (o) =>
      FileLinkStore.open({
        dir: join(deps.dataDir, "file-links", `${o.platform}-${pathComponent(o.accountId)}`),
        clock: deps.clock,
        ttlMs: o.ttlMs,
        maxTotalBytes: o.maxTotalBytes,
        log: deps.log,
      }),
  };
}

export class FileLinkStore implements FileStore {
  readonly #o: FileLinkStoreOptions;
  readonly #key: Buffer;
  /** Stored id (the token's hash) → size and expiry, for the disk bound and the sweep. */
  readonly #index: Map<string, { size: number; expiresAt: number }>;
  #sweepTimer: Timer | undefined;
  #closed = false;
  /** The writes, one at a time (the one key: the store's folder). */
  readonly #writes = createSerialQueue<"folder">();

  private constructor(options: FileLinkStoreOptions, key: Buffer, index: Map<string, { size: number; expiresAt: number }>) {
    this.#o = options;
    this.#key = key;
    this.#index = index;
  }

  /** Opens the folder: its key (made once), the links kept by an earlier life; then sweeps. */
  static async open(options: FileLinkStoreOptions): Promise<FileLinkStore> {
    await mkdir(options.dir, { recursive: true, mode: 0o700 });
    const key = await readOrMakeKey(join(options.dir, "key"), options.randomBytes ?? randomBytes);
    const index = new Map<string, { size: number; expiresAt: number }>();
    const names = await readdir(options.dir);
    for (const name of names) {
      const id = /^([0-9a-f]{64})\.json$/.exec(name)?.[1];
      if (!id) continue;
      const meta = await readMeta(join(options.dir, name));
      if (meta) index.set(id, { size: meta.size, expiresAt: meta.expiresAt });
      else await removeFiles(options.dir, id);
    }
    // Bytes a kill left without their meta, and temporary files of a write cut short.
    for (const name of names) {
      const orphan = /^([0-9a-f]{64})\.bin$/.exec(name)?.[1];
      if ((orphan && !index.has(orphan)) || (name.startsWith(".") && name.endsWith(".tmp"))) await rm(join(options.dir, name), { force: true });
    }
    const store = new FileLinkStore(options, key, index);
    await store.sweep();
    store.#scheduleSweep();
    return store;
  }

  /** Total bytes kept now. */
  get totalBytes(): number {
    let total = 0;
    for (const { size } of this.#index.values()) total += size;
    return total;
  }

  /** Keeps `file` for `purpose` and returns its link (the same token for the same purpose and bytes). */
  put(purpose: string, file: StoredFile): Promise<FileLink> {
    return this.#writes.run("folder", () => this.#put(purpose, file));
  }

  async #put(purpose: string, file: StoredFile): Promise<FileLink> {
    if (file.data.length > this.#o.maxTotalBytes) throw new Error(`a file of ${file.data.length} bytes is larger than file_links.max_total_mb`);
    const digest = createHash("sha256").update(file.data).digest("hex");
    const token = createHmac("sha256", this.#key).update(`${purpose}\u0000${digest}`).digest("base64url");
    const id = idOf(token);
    const now = this.#o.clock.now();
    // A live link sent again keeps its end, so what the platform is sent (and its dedupe key) is the same.
    const kept = this.#index.get(id)?.expiresAt;
    const expiresAt = kept !== undefined && kept > now ? kept : now + this.#o.ttlMs;
    await this.#makeRoom(file.data.length, id);
    const meta: FileLinkMeta = { fileName: file.fileName, mimeType: file.mimeType, size: file.data.length, createdAt: now, expiresAt };
    // The bytes first: a meta file is only ever beside whole bytes.
    await writeFileAtomic(join(this.#o.dir, `${id}.bin`), file.data);
    await writeFileAtomic(join(this.#o.dir, `${id}.json`), JSON.stringify(meta));
    this.#index.set(id, { size: meta.size, expiresAt });
    return { token, expiresAt };
  }

  /** The live file behind `token`; undefined for a token that is malformed, unknown or expired. */
  async find(token: string): Promise<FoundFile | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const id = idOf(token);
    const known = this.#index.get(id);
    if (!known) return undefined;
    if (known.expiresAt <= this.#o.clock.now()) {
      // Deleted after the writes under way; the answer (404) need not wait for them.
      void this.#writes.run("folder", () => this.#forgetExpired([id])).catch((error: unknown) => this.#warnFailed(error));
      return undefined;
    }
    const meta = await readMeta(join(this.#o.dir, `${id}.json`));
    const path = join(this.#o.dir, `${id}.bin`);
    const size = await stat(path).then(
      (s) => s.size,
      () => undefined,
    );
    if (!meta || size !== meta.size) return undefined;
    return { meta, read: (start, end) => createReadStream(path, { start, end }) };
  }

  /** Deletes every expired file; resolves with how many links ended. */
  sweep(): Promise<number> {
    return this.#writes.run("folder", async () => {
      const ended = await this.#forgetExpired([...this.#index.keys()]);
      if (ended > 0) this.#o.log.debug({ ended }, "expired file links deleted");
      return ended;
    });
  }

  /** Stops the sweep (the files stay for the next life). */
  close(): void {
    this.#closed = true;
    this.#sweepTimer?.cancel();
  }

  #scheduleSweep(): void {
    if (this.#closed) return;
    this.#sweepTimer = this.#o.clock.setTimeout(
      () => {
        void this.sweep()
          .catch((error: unknown) => this.#warnFailed(error))
          .finally(() => this.#scheduleSweep());
      },
      Math.min(SWEEP_EVERY_MS, this.#o.ttlMs),
    );
  }

  #warnFailed(error: unknown): void {
    this.#o.log.warn({ err: error instanceof Error ? error.message : String(error) }, "deleting expired file links failed");
  }

  /** Ends the links closest to expiry until `bytes` more fit (a link being renewed counts as gone). */
  async #makeRoom(bytes: number, renewing: string): Promise<void> {
    let total = this.totalBytes - (this.#index.get(renewing)?.size ?? 0);
    if (total + bytes <= this.#o.maxTotalBytes) return;
    const byExpiry = [...this.#index].filter(([id]) => id !== renewing).sort((a, b) => a[1].expiresAt - b[1].expiresAt);
    for (const [id, { size }] of byExpiry) {
      if (total + bytes <= this.#o.maxTotalBytes) break;
      await this.#forget(id);
      total -= size;
      this.#o.log.info("a file link ended early: the served files reached file_links.max_total_mb");
    }
  }

  /** Deletes those of `ids` that are expired now (one renewed meanwhile is not); resolves with how many. */
  async #forgetExpired(ids: readonly string[]): Promise<number> {
    const now = this.#o.clock.now();
    const expired = ids.filter((id) => (this.#index.get(id)?.expiresAt ?? Number.POSITIVE_INFINITY) <= now);
    for (const id of expired) await this.#forget(id);
    return expired.length;
  }

  async #forget(id: string): Promise<void> {
    this.#index.delete(id);
    await removeFiles(this.#o.dir, id);
  }
}

const idOf = (token: string): string => createHash("sha256").update(token).digest("hex");

async function removeFiles(dir: string, id: string): Promise<void> {
  // The meta first: bytes without a meta are never served, and are removed at the next open.
  await rm(join(dir, `${id}.json`), { force: true });
  await rm(join(dir, `${id}.bin`), { force: true });
}

async function readMeta(file: string): Promise<FileLinkMeta | undefined> {
  try {
    const parsed = Meta.safeParse(JSON.parse(await readFile(file, "utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function readOrMakeKey(file: string, random: (n: number) => Buffer): Promise<Buffer> {
  const kept = await readFile(file).catch(() => undefined);
  if (kept && kept.length === 32) return kept;
  const key = random(32);
  await writeFileAtomic(file, key);
  return key;
}
