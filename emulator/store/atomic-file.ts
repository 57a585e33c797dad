/**
 * A lowdb adapter that writes the way a database should: to a temporary file,
 * fsync, rename over the old file, fsync the directory. A crash leaves either
 * the old state or the new one, never half of one.
 */
import { readFile } from "node:fs/promises";
import { writeFileAtomic } from "../../shared/durable-files.js";
import type { Adapter } from "lowdb";

export class AtomicJsonFile<T> implements Adapter<T> {
  constructor(private readonly file: string) {}

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
    await writeFileAtomic(this.file, JSON.stringify(data));
  }
}
