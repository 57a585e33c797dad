/**
 * Gateway conversations on disk: one append-only JSON-lines log per instance,
 * `conversations/<instance id>.jsonl`, one stored response a line. A turn
 * costs one appended line (fsynced with the next group flush), never a
 * rewrite of the other conversations; deleting an instance removes its file.
 *
 * Nothing in a log ever becomes dead (responses are never edited, and a
 * session's head is its last line), so compaction is needed only when the
 * whole state is replaced (reset, snapshot import): then every log is
 * rewritten atomically from memory. A crash can tear the last line; loading
 * drops such a tail and truncates it away before anything is appended.
 */
import { mkdir, open, readdir, rm, truncate } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { appendFileDurable, syncDirectory, writeFileAtomic } from "../../shared/durable-files.js";
import { type GatewayState, headKey, type StoredResponse } from "./state.js";
import { isMintedId, StoredResponse as StoredResponseRecord } from "./schema.js";

export const CONVERSATIONS_DIR = "conversations";
const SUFFIX = ".jsonl";

/** A line: the response, and `p`, the seeded generator's position once its ids were drawn. */
const Line = StoredResponseRecord.extend({ p: z.number().int().min(0).optional() });

export interface ConversationLogs {
  /**
   * Opens the folder without reading the logs: leftovers of a crash are
   * removed, torn tails truncated, and the largest `p` found is resolved
   * (from each log's last line). Each log is read the first time its
   * instance is used (`ensure`), so start-up does not grow with conversations.
   */
  open(): Promise<{ position: number }>;
  /** Reads the instance's log into `state()` unless that happened already. */
  ensure(instanceId: string): Promise<void>;
  /** Reads every log not read yet (snapshot export, migration). */
  ensureAll(): Promise<void>;
  /** Buffers one line; written by the next `flush`. */
  append(response: StoredResponse, position: number | undefined): void;
  /** Buffers the removal of an instance's log. */
  drop(instanceId: string): void;
  /** Everything changed at once: the next flush rewrites every log from `state()`. */
  rewrite(): void;
  readonly pending: boolean;
  /** Writes what is buffered. On failure everything is kept for the next try. */
  flush(): Promise<void>;
}

/**
 * Calls `onLine` for every complete line of `file`, reading it in pieces (a
 * log can outgrow the longest string V8 allows). Resolves the byte length of
 * the complete lines when an unterminated tail follows them, else undefined.
 */
async function readLines(file: string, onLine: (line: string) => void): Promise<number | undefined> {
  const handle = await open(file, "r");
  try {
    const chunk = Buffer.allocUnsafe(4 << 20);
    let carry = Buffer.alloc(0);
    let offset = 0;
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
      const data = carry.length ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      let start = 0;
      for (let end = data.indexOf(10, start); end !== -1; end = data.indexOf(10, start)) {
        if (end > start) onLine(data.toString("utf8", start, end));
        start = end + 1;
      }
      carry = Buffer.from(data.subarray(start));
    }
    return carry.length ? offset - carry.length : undefined;
  } finally {
    await handle.close();
  }
}

/** One line through the schema; undefined when it does not parse or names another instance. */
function parseLine(raw: string, instanceId: string): z.output<typeof Line> | undefined {
  let parsed: ReturnType<typeof Line.safeParse>;
  try {
    parsed = Line.safeParse(JSON.parse(raw));
  } catch {
    return undefined;
  }
  return parsed.success && parsed.data.instance_id === instanceId ? parsed.data : undefined;
}

/**
 * The end of a log, read backwards: `complete` is the byte length to keep
 * when an unterminated tail follows the last newline (else undefined), and
 * `last` the last complete line.
 */
async function tailOf(file: string): Promise<{ complete: number | undefined; last: string | undefined }> {
  const handle = await open(file, "r");
  try {
    const size = (await handle.stat()).size;
    const newlines: number[] = [];
    const piece = Buffer.allocUnsafe(64 << 10);
    // Find the last two newlines (or the start of the file).
    for (let end = size; end > 0 && newlines.length < 2; ) {
      const start = Math.max(0, end - piece.length);
      const { bytesRead } = await handle.read(piece, 0, end - start, start);
      for (let i = bytesRead - 1; i >= 0 && newlines.length < 2; i--) if (piece[i] === 10) newlines.push(start + i);
      end = start;
    }
    if (newlines.length === 0) return { complete: size > 0 ? 0 : undefined, last: undefined };
    const lastNewline = newlines[0]!;
    const lineStart = newlines.length > 1 ? newlines[1]! + 1 : 0;
    const line = Buffer.alloc(lastNewline - lineStart);
    await handle.read(line, 0, line.length, lineStart);
    return { complete: lastNewline + 1 < size ? lastNewline + 1 : undefined, last: line.length ? line.toString("utf8") : undefined };
  } finally {
    await handle.close();
  }
}

export function conversationLogs(dataDir: string, state: () => GatewayState, report: (message: string) => void = () => {}): ConversationLogs {
  const dir = join(dataDir, CONVERSATIONS_DIR);
  const fileOf = (instanceId: string) => {
    // Ids reach a path only in the form the API mints: nothing else can name a file.
    if (!isMintedId(instanceId)) throw new Error(`Refusing a log path for instance id ${JSON.stringify(instanceId.slice(0, 64))}.`);
    return join(dir, `${instanceId}${SUFFIX}`);
  };
  let lines = new Map<string, string[]>();
  let drops = new Set<string>();
  let rewriteAll = false;
  /** Instances whose last append failed: the next one starts on a new line, so a torn fragment stays alone. */
  const torn = new Set<string>();
  /** Instances with a log on disk not read into memory yet. */
  const unread = new Set<string>();
  const inFlight = new Map<string, Promise<void>>();
  /** Bumped when everything is replaced: a read under way then merges nothing. */
  let epoch = 0;

  async function readLog(instanceId: string): Promise<GatewayState> {
    const loaded: GatewayState = { responses: {}, heads: {} };
    let skipped = 0;
    // One string per distinct value: a million turns share a few sessions, models and parents.
    const interned = new Map<string, string>();
    const intern = (value: string) => {
      const known = interned.get(value);
      if (known !== undefined) return known;
      interned.set(value, value);
      return value;
    };
    await readLines(fileOf(instanceId), (raw) => {
      const line = parseLine(raw, instanceId);
      if (!line) {
        skipped++;
        return;
      }
      const response: StoredResponse = {
        id: line.id,
        instance_id: instanceId,
        session: intern(line.session),
        parent_id: line.parent_id === null ? null : Object.hasOwn(loaded.responses, line.parent_id) ? loaded.responses[line.parent_id]!.id : line.parent_id,
        input_text: line.input_text,
        output_text: line.output_text,
        model: intern(line.model),
        created_at: line.created_at,
        ...(line.answer ? { answer: line.answer } : {}),
      };
      loaded.responses[response.id] = response;
      loaded.heads[headKey(instanceId, response.session)] = response.id;
    });
    if (skipped) report(`skipped ${skipped} unreadable line(s) in ${fileOf(instanceId)}`);
    return loaded;
  }

  async function writeAll(): Promise<void> {
    const current = state();
    const byInstance = new Map<string, StoredResponse[]>();
    const heads = new Set(Object.values(current.heads));
    // Heads last within their file: a session's head is its last line.
    for (const pass of [false, true]) {
      for (const response of Object.values(current.responses)) {
        if (heads.has(response.id) !== pass) continue;
        const list = byInstance.get(response.instance_id) ?? [];
        byInstance.set(response.instance_id, list);
        list.push(response);
      }
    }
    const existing = await listLogs();
    for (const [instanceId, responses] of byInstance) {
      await writeFileAtomic(fileOf(instanceId), responses.map((r) => `${JSON.stringify(r)}\n`).join(""));
      torn.delete(instanceId);
    }
    for (const instanceId of existing) if (!byInstance.has(instanceId)) await rm(fileOf(instanceId), { force: true });
    await syncDirectory(dir);
  }

  async function listLogs(): Promise<string[]> {
    await mkdirp();
    const names = await readdir(dir);
    return names.filter((n) => n.endsWith(SUFFIX) && isMintedId(n.slice(0, -SUFFIX.length))).map((n) => n.slice(0, -SUFFIX.length));
  }

  const mkdirp = () => mkdir(dir, { recursive: true });

  return {
    async open() {
      await mkdirp();
      let position = 0;
      for (const name of await readdir(dir)) {
        // Temporary files of a rewrite a crash interrupted: the rename never happened.
        if (name.startsWith(".") && name.endsWith(".tmp")) {
          await rm(join(dir, name), { force: true });
          continue;
        }
        const instanceId = name.slice(0, -SUFFIX.length);
        if (!name.endsWith(SUFFIX) || !isMintedId(instanceId)) continue;
        const file = join(dir, name);
        const { complete, last } = await tailOf(file);
        if (complete !== undefined) {
          // A torn last line (a crash mid-append): never answered as stored, so dropped before anything is appended.
          await truncate(file, complete);
          const handle = await open(file, "r+");
          await handle.sync().finally(() => handle.close());
        }
        // Positions only grow along a log, so its last line holds its largest; a log whose last line
        // does not parse is scanned whole.
        let p = last === undefined ? undefined : parseLine(last, instanceId)?.p;
        if (last !== undefined && p === undefined) await readLines(file, (raw) => (p = Math.max(p ?? 0, parseLine(raw, instanceId)?.p ?? 0)));
        if (p !== undefined && p > position) position = p;
        unread.add(instanceId);
      }
      return { position };
    },

    ensure(instanceId) {
      if (!unread.has(instanceId)) return Promise.resolve();
      let reading = inFlight.get(instanceId);
      if (reading) return reading;
      const startedIn = epoch;
      reading = readLog(instanceId).then((loaded) => {
        inFlight.delete(instanceId);
        // Dropped, or everything replaced, while it was read: what was read is gone.
        if (epoch !== startedIn || !unread.has(instanceId)) return;
        unread.delete(instanceId);
        const current = state();
        for (const response of Object.values(loaded.responses)) current.responses[response.id] = response;
        for (const [key, id] of Object.entries(loaded.heads)) if (!Object.hasOwn(current.heads, key)) current.heads[key] = id;
      });
      inFlight.set(instanceId, reading);
      reading.catch(() => inFlight.delete(instanceId));
      return reading;
    },

    async ensureAll() {
      await Promise.all([...unread].map((id) => this.ensure(id)));
    },

    append(response, position) {
      if (rewriteAll) return; // the rewrite takes it from memory
      fileOf(response.instance_id);
      const list = lines.get(response.instance_id) ?? [];
      lines.set(response.instance_id, list);
      list.push(`${JSON.stringify(position === undefined ? response : { ...response, p: position })}\n`);
    },

    drop(instanceId) {
      lines.delete(instanceId);
      unread.delete(instanceId);
      if (isMintedId(instanceId)) drops.add(instanceId);
    },

    rewrite() {
      // Everything is replaced: logs not read yet belong to the old state, and the rewrite removes them.
      unread.clear();
      epoch++;
      rewriteAll = true;
      lines = new Map();
      drops = new Set();
    },

    get pending() {
      return rewriteAll || lines.size > 0 || drops.size > 0;
    },

    async flush() {
      if (rewriteAll) {
        rewriteAll = false;
        const dropped = drops;
        drops = new Set();
        try {
          await writeAll();
        } catch (error) {
          rewriteAll = true;
          for (const id of dropped) drops.add(id);
          throw error;
        }
        // Turns recorded while the rewrite ran were buffered as lines: the next flush appends them.
        return;
      }
      const batch = lines;
      const dropped = drops;
      lines = new Map();
      drops = new Set();
      if (batch.size || dropped.size) await mkdirp();
      const failed = new Map<string, string[]>();
      const failedDrops = new Set<string>();
      let firstError: unknown;
      await Promise.all([
        ...[...batch].map(async ([instanceId, chunk]) => {
          const prefix = torn.has(instanceId) ? "\n" : "";
          try {
            await appendFileDurable(fileOf(instanceId), prefix + chunk.join(""));
            torn.delete(instanceId);
          } catch (error) {
            torn.add(instanceId);
            failed.set(instanceId, chunk);
            firstError ??= error;
          }
        }),
        ...[...dropped].map(async (instanceId) => {
          try {
            await rm(fileOf(instanceId), { force: true });
          } catch (error) {
            failedDrops.add(instanceId);
            firstError ??= error;
          }
        }),
      ]);
      if (firstError === undefined) return;
      // Keep what failed ahead of anything appended meanwhile, in order.
      for (const [instanceId, chunk] of failed) {
        if (rewriteAll || drops.has(instanceId)) continue;
        lines.set(instanceId, [...chunk, ...(lines.get(instanceId) ?? [])]);
      }
      for (const id of failedDrops) if (!rewriteAll) drops.add(id);
      throw firstError;
    },
  };
}
