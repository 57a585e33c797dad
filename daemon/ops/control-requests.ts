/**
 * How a command reaches the running daemon: a request file dropped in
 * `<dataDir>/control/`, answered by a response file beside it. The data
 * directory is what the command line and the daemon already share (the
 * config names it), it needs no port (the ops server may be off or on a
 * random port) and it is as private as the journal it sits beside (0700;
 * files 0600). Nothing secret travels: a pairing code goes as its hash.
 *
 * The daemon watches the folder (`fs.watch`, and a poll in case an event is
 * missed), answers each request once, writes the answer atomically, and
 * deletes the request; the caller reads the answer and deletes it.
 */
import { watch, type FSWatcher } from "node:fs";
import { access, mkdir, readdir, readFile, rm, watch as watchFolder } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { z } from "zod";
import type { Clock } from "../../shared/clock.js";
import { writeFileAtomic } from "../../shared/durable-files.js";
import { cryptoRandom, hex } from "../../shared/random.js";

export const ControlRequestSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("pairing.approve"), channel: z.string(), codeHash: z.string().regex(/^[0-9a-f]{64}$/) }),
  z.strictObject({ op: z.literal("pairing.list"), channel: z.string().optional() }),
  z.strictObject({ op: z.literal("pairing.revoke"), channel: z.string(), user: z.string() }),
  z.strictObject({ op: z.literal("config.reload") }),
]);
export type ControlRequest = z.infer<typeof ControlRequestSchema>;
export type PairingRequest = Exclude<ControlRequest, { op: "config.reload" }>;

export const ControlResponseSchema = z.discriminatedUnion("ok", [
  z.strictObject({ ok: z.literal(true), text: z.string() }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);
export type ControlResponse = z.infer<typeof ControlResponseSchema>;

export const controlDirOf = (dataDir: string): string => join(dataDir, "control");
const REQUEST = ".req.json";
const RESPONSE = ".res.json";
/** How often the folder is looked at when no watch event came. */
const POLL_MS = 500;

export interface ControlRequests {
  close(): void;
}

/** Answers the requests dropped in `<dataDir>/control/` with `handle`, until closed. */
export async function serveControlRequests(options: {
  dataDir: string;
  clock: Clock;
  logger: Logger;
  handle(request: ControlRequest): Promise<ControlResponse>;
}): Promise<ControlRequests> {
  const dir = controlDirOf(options.dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;

  const answer = async (name: string) => {
    const id = name.slice(0, -REQUEST.length);
    let response: ControlResponse;
    try {
      const parsed = ControlRequestSchema.safeParse(JSON.parse(await readFile(join(dir, name), "utf8")));
      response = parsed.success ? await options.handle(parsed.data) : { ok: false, error: "not a request this daemon understands (a newer command line?)" };
    } catch (error) {
      response = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    await writeFileAtomic(join(dir, `${id}${RESPONSE}`), JSON.stringify(response));
    await rm(join(dir, name), { force: true });
  };
  /** One pass over the folder; a pass asked for meanwhile runs right after. */
  const scan = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        for (const name of await readdir(dir).catch(() => [] as string[])) {
          if (closed) return;
          if (name.endsWith(REQUEST) && !name.startsWith(".")) await answer(name);
        }
      } while (again && !closed);
    })()
      .catch((error: unknown) => options.logger.warn({ err: String(error) }, "control request failed"))
      .finally(() => (running = undefined));
    return running;
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, () => void scan());
  } catch {
    // No watch on this filesystem: the poll alone answers.
  }
  let timer: { cancel(): void } | undefined;
  const poll = () => {
    if (closed) return;
    void scan().finally(() => {
      if (!closed) timer = options.clock.setTimeout(poll, POLL_MS);
    });
  };
  poll();
  return {
    close() {
      closed = true;
      watcher?.close();
      timer?.cancel();
    },
  };
}

/** Thrown when no daemon answered in time. */
export class NoDaemonAnswerError extends Error {
  override readonly name = "NoDaemonAnswerError";
}

/** Drops `request` for the daemon using `dataDir` and waits for its answer (default 10 s). */
export async function sendControlRequest(dataDir: string, request: ControlRequest, options: { timeoutMs?: number } = {}): Promise<ControlResponse> {
  const dir = controlDirOf(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const id = `${Date.now()}-${hex(cryptoRandom, 8)}`;
  const responseFile = join(dir, `${id}${RESPONSE}`);
  await writeFileAtomic(join(dir, `${id}${REQUEST}`), JSON.stringify(request));
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  const ac = new AbortController();
  // The watch wakes us at once; the poll covers a missed event.
  const woken = (async () => {
    try {
      for await (const _ of watchFolder(dir, { signal: ac.signal })) if (await exists(responseFile)) return;
    } catch {
      // aborted, or no watch here
    }
  })();
  try {
    while (Date.now() < deadline) {
      if (await exists(responseFile)) {
        const response = ControlResponseSchema.parse(JSON.parse(await readFile(responseFile, "utf8")));
        await rm(responseFile, { force: true });
        return response;
      }
      await Promise.race([woken, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
  } finally {
    ac.abort();
  }
  await rm(join(dir, `${id}${REQUEST}`), { force: true });
  throw new NoDaemonAnswerError(`No daemon answered within ${timeoutMs / 1000} s: is it running with dataDir ${dataDir}?`);
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );
