/**
 * A lowdb adapter that writes the way a database should: to a temporary file,
 * fsync, rename over the old file, fsync the directory. A crash leaves either
 * the old state or the new one, never half of one.
 */
import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Adapter } from "lowdb";

export class AtomicJsonFile<T> implements Adapter<T> {
  private readonly tmp: string;

  constructor(private readonly file: string) {
    this.tmp = join(dirname(file), `.${basename(file)}.tmp`);
  }

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
    return JSON.parse(text) as T;
  }

  async write(data: T): Promise<void> {
    const handle = await open(this.tmp, "w", 0o600);
    try {
      await handle.writeFile(JSON.stringify(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(this.tmp, this.file);
    await syncDirectory(dirname(this.file));
  }

  async discardTemporary(): Promise<void> {
    await rm(this.tmp, { force: true });
  }
}

async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic.
  }
}
