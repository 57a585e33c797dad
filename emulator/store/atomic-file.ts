/**
 * A lowdb adapter that writes the way a database should (through
 * `writeFileAtomic`: a uniquely named temporary file, fsync, rename over the
 * old file, fsync of the directory) and reads through a schema, never a cast.
 * A crash leaves either the old state or the new one, never half of one.
 */
import { readFile } from "node:fs/promises";
import type { Adapter } from "lowdb";
import { writeFileAtomic } from "../../shared/durable-files.js";

export class AtomicJsonFile<T> implements Adapter<T> {
  constructor(
    private readonly file: string,
    private readonly parse: (value: unknown) => T,
  ) {}

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
    return this.parse(JSON.parse(text));
  }

  async write(data: T): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify(data));
  }
}
