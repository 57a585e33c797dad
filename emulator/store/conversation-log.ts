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
import { headKey } from "../gateway/conversation.js";
import type { GatewayState, StoredResponse } from "../gateway/types.js";
import { isMintedId, StoredResponse as StoredResponseSchema } from "./schema.js";

export const CONVERSATIONS_DIR = "conversations";
const SUFFIX = ".jsonl";

/** A line: the response, and `p`, the seeded generator's position once its ids were drawn. */
const Line = StoredResponseSchema.extend({ p: z.number().int().min(0).optional() });

export interface LoadedConversations {
  state: GatewayState;
  /** Largest `p` found (0 when none). */
  position: number;
  /** Lines skipped because they did not parse (a torn tail is not counted). */
  skipped: number;
}

export interface ConversationLogs {
  load(): Promise<LoadedConversations>;
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

export function conversationLogs(dataDir: string, state: () => GatewayState): ConversationLogs {
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

  async function writeAll(): Promise<void> {
    const current = state();
    const byInstance = new Map<string, StoredResponse[]>();
    const heads = new Set(Object.values(current.heads));
    // Heads last within their file: a session's head is its last line.
    for (const pass of [false, true]) {
      for (const response of Object.values(current.responses)) {
        if (heads.has(response.id) !== pass) continue;
        let list = byInstance.get(response.instance_id);
        if (!list) byInstance.set(response.instance_id, (list = []));
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
    async load() {
      await mkdirp();
      const loaded: GatewayState = { responses: {}, heads: {} };
      let position = 0;
      let skipped = 0;
      for (const name of await readdir(dir)) {
        // Temporary files of a rewrite a crash interrupted: the rename never happened.
        if (name.startsWith(".") && name.endsWith(".tmp")) {
          await rm(join(dir, name), { force: true });
          continue;
        }
        const instanceId = name.slice(0, -SUFFIX.length);
        if (!name.endsWith(SUFFIX) || !isMintedId(instanceId)) continue;
        // One string per distinct value: a million turns share a few sessions, models and parents.
        const interned = new Map<string, string>();
        const intern = (value: string) => {
          const known = interned.get(value);
          if (known !== undefined) return known;
          interned.set(value, value);
          return value;
        };
        const file = join(dir, name);
        const complete = await readLines(file, (raw) => {
          let parsed;
          try {
            parsed = Line.safeParse(JSON.parse(raw));
          } catch {
            parsed = undefined;
          }
          if (!parsed?.success || parsed.data.instance_id !== instanceId) {
            skipped++;
            return;
          }
          const line = parsed.data;
          if (line.p !== undefined && line.p > position) position = line.p;
          const response: StoredResponse = {
            id: line.id,
            instance_id: instanceId,
            session: intern(line.session),
            parent_id: line.parent_id === null ? null : (Object.hasOwn(loaded.responses, line.parent_id) ? loaded.responses[line.parent_id]!.id : line.parent_id),
            input_text: line.input_text,
            output_text: line.output_text,
            model: intern(line.model),
            created_at: line.created_at,
          };
          loaded.responses[response.id] = response;
          loaded.heads[headKey(instanceId, response.session)] = response.id;
        });
        if (complete !== undefined) {
          // A torn last line (a crash mid-append): never answered as stored, so dropped.
          await truncate(file, complete);
          const handle = await open(file, "r+");
          await handle.sync().finally(() => handle.close());
        }
      }
      return { state: loaded, position, skipped };
    },

    append(response, position) {
      if (rewriteAll) return; // the rewrite takes it from memory
      fileOf(response.instance_id);
      let list = lines.get(response.instance_id);
      if (!list) lines.set(response.instance_id, (list = []));
      list.push(`${JSON.stringify(position === undefined ? response : { ...response, p: position })}\n`);
    },

    drop(instanceId) {
      lines.delete(instanceId);
      if (isMintedId(instanceId)) drops.add(instanceId);
    },

    rewrite() {
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
