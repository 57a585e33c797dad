/**
 * Serving recordings (`--replay DIR`, `createEmulator({ replay })`): a `/v1`
 * request is answered from the recording it names (`x-agent-bridge-recording`
 * header, else its sandbox's name, else `default`) when an equal request was
 * recorded: status, headers and body as recorded, a stream event by event at
 * its recorded pace. When none was:
 * - `strict` (the default under `CI=true`): 404 naming the closest recorded
 *   request and what differs;
 * - `record-if-missing`: forwarded to the upstream, answered, and appended
 *   to the recording;
 * - `passthrough`: forwarded to the upstream when one is given (nothing
 *   written), else answered by the emulator itself, whose model then answers
 *   from the recordings' model-script rules.
 */
import type { NextFunction, Request, Response } from "express";
import { performance } from "node:perf_hooks";
import { Agent } from "undici";
import { BoundedMap } from "../../shared/util/bounded-map.js";
import { type OperationId, routes } from "../../shared/api.js";
import type { RecordingUsage } from "../../shared/schemas/recordings.js";
import type { ModelScriptInput } from "../gateway/script/schema.js";
import { type Exchange, interactionOf } from "./capture.js";
import { DEFAULT_RECORDING, type Interaction, RECORDING_HEADER, type Recording, recordingFileName } from "./format.js";
import { applyRuleEdit } from "./edit.js";
import { closestRecorded, type IncomingRequest, matchesRedacted, recordedKey, requestKey } from "./match.js";
import { REDACTED } from "../workspace/redact.js";
import { readRecordingDir } from "./read.js";
import { createScrubber } from "./scrub.js";
import { createRecordingWriter, recordingNameOf } from "./store.js";
import { callUpstream, failureCode } from "./upstream.js";
import { join } from "node:path";

export const REPLAY_MODES = ["strict", "record-if-missing", "passthrough"] as const;
export type ReplayMode = (typeof REPLAY_MODES)[number];
/** On every answer the replay gave: `<recording>#<n>` (from 1), or `miss` on the strict mode's 404. */
export const REPLAY_HEADER = "x-agent-bridge-replay";

export interface ReplayOptions {
  /** The recordings directory. */
  dir: string;
  /** Default: `strict` under `CI=true`; else `record-if-missing` when `upstream` is given, `passthrough` when not. */
  mode?: ReplayMode;
  /** The real service, for `record-if-missing` (required there) and `passthrough`. */
  upstream?: string;
  /** Send a stream's events at their recorded times (default true); false sends them at once. */
  pace?: boolean;
  /** Values scrubbed from what `record-if-missing` writes, besides key-shaped ones. */
  secrets?: readonly string[];
}

export type { RecordingUsage };

export interface Replayer {
  readonly mode: ReplayMode;
  /** Express middleware: answers what it can, hands the rest on (`next`). */
  handle(req: Request, res: Response, next: NextFunction): void;
  usage(): RecordingUsage[];
  /** Every recording's model-script rules, in one script (undefined when none has any). */
  modelScript(): ModelScriptInput | undefined;
  close(): Promise<void>;
}

/** Each `/v1` route as a pattern, so a replayed request is journaled under its operation like any other. */
const OPERATIONS = (Object.entries(routes) as [OperationId, (typeof routes)[OperationId]][])
  .filter(([, spec]) => spec.path.startsWith("/v1/"))
  .map(([id, spec]) => ({
    id,
    method: spec.method,
    names: [...spec.path.matchAll(/\{([a-z_]+)\}/g)].length,
    re: new RegExp(`^${spec.path.replace(/\{[a-z_]+\}/g, "[^/]+")}$`),
  }))
  .sort((a, b) => a.names - b.names);
const operationOf = (method: string, path: string): OperationId | undefined => OPERATIONS.find((o) => o.method === method && o.re.test(path))?.id;

/** The default mode: CI replays strictly, so a missing recording fails the build instead of calling out. */
export function defaultReplayMode(upstream: string | undefined, env: NodeJS.ProcessEnv = process.env): ReplayMode {
  if (env.CI === "true") return "strict";
  return upstream ? "record-if-missing" : "passthrough";
}

/** One recording as served: its interactions by request, a cursor per request, what was used. */
class ServedRecording {
  /** Interaction indexes per request key, in recorded order. */
  readonly #byKey = new Map<string, number[]>();
  /** How many times each request key was answered (the next answer's position). */
  readonly #cursor = new Map<string, number>();
  /** Interaction indexes served at least once. */
  readonly #used = new Set<number>();
  /** Message answers as their hand-edited model-script rules now say them, by interaction index. */
  readonly #edited: Interaction[] = [];
  /** Whether any recorded request had a secret redacted (only then is the slower redacted match tried). */
  #redacted = false;

  constructor(
    readonly recording: Recording,
    readonly file: string,
  ) {
    for (const [i, interaction] of recording.interactions.entries()) {
      this.#index(interaction, i);
      this.#edited[i] = applyRuleEdit(interaction, recording);
    }
  }

  #index(interaction: Interaction, i: number): void {
    if (JSON.stringify(interaction.request).includes(REDACTED)) this.#redacted = true;
    const key = recordedKey(interaction.request);
    this.#byKey.set(key, [...(this.#byKey.get(key) ?? []), i]);
  }

  /** The interaction answering this request next, if any was recorded: equal, else equal but for redacted secrets. */
  take(incoming: IncomingRequest): { interaction: Interaction; index: number } | undefined {
    let key = requestKey(incoming);
    if (!this.#byKey.has(key) && this.#redacted) {
      const found = this.recording.interactions.find((i) => matchesRedacted(i.request, incoming));
      if (found) key = recordedKey(found.request);
    }
    const list = this.#byKey.get(key);
    if (!list) return undefined;
    const n = this.#cursor.get(key) ?? 0;
    this.#cursor.set(key, n + 1);
    const index = list[Math.min(n, list.length - 1)]!;
    this.#used.add(index);
    return { interaction: this.#edited[index] ?? this.recording.interactions[index]!, index };
  }

  /** A newly recorded interaction, counted as used (it answered the request that made it). */
  add(interaction: Interaction): number {
    const index = this.recording.interactions.length;
    this.recording.interactions.push(interaction);
    this.#index(interaction, index);
    const key = recordedKey(interaction.request);
    this.#cursor.set(key, (this.#cursor.get(key) ?? 0) + 1);
    this.#used.add(index);
    return index;
  }

  usage(): RecordingUsage {
    const total = this.recording.interactions.length;
    const unused = Array.from({ length: total }, (_, i) => i).filter((i) => !this.#used.has(i));
    return { name: this.recording.name, file: this.file, interactions: total, used: this.#used.size, unused: unused.map((i) => i + 1) };
  }
}

/** Reads the directory (every file checked; a bad one throws a RecordingError naming file and line) and makes the replayer. */
export async function openReplay(options: ReplayOptions, nameOfSandbox: (res: Response) => string | undefined = () => undefined): Promise<Replayer> {
  const mode = options.mode ?? defaultReplayMode(options.upstream);
  if (mode === "record-if-missing" && !options.upstream) throw new Error("replay: mode record-if-missing needs an upstream to record from");
  const recordings = new Map<string, ServedRecording>();
  for (const recording of await readRecordingDir(options.dir)) {
    recordings.set(recording.name, new ServedRecording(recording, join(options.dir, recordingFileName(recording.name))));
  }
  const scrub = createScrubber({ secrets: options.secrets ?? [] });
  const writer = mode === "record-if-missing" ? createRecordingWriter(options.dir, { upstream: new URL(options.upstream!).origin }) : undefined;
  const dispatcher = options.upstream ? new Agent({ keepAliveTimeout: 30_000, bodyTimeout: 0 }) : undefined;
  const pace = options.pace !== false;
  /** Streams being paced, so close() can end them. */
  const timers = new Set<NodeJS.Timeout>();

  /** Paths as scrubbed, by path: a suite asks the same few paths again and again. */
  const scrubbedPaths = new BoundedMap<string, string>(1000);
  const incomingOf = (req: Request): IncomingRequest => {
    const url = new URL(req.originalUrl, "http://replay");
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(url.searchParams.keys())) {
      const values = url.searchParams.getAll(key).map(scrub.text);
      query[key] = values.length === 1 ? values[0]! : values;
    }
    let path = scrubbedPaths.get(url.pathname);
    if (path === undefined) {
      path = scrub.text(url.pathname);
      scrubbedPaths.set(url.pathname, path);
    }
    const json = req.body !== undefined && !Buffer.isBuffer(req.body) && req.is("application/json");
    return { method: req.method, path, query, body: json ? scrub.json(req.body) : undefined };
  };

  const nameOf = (req: Request, res: Response): string => {
    const header = req.headers[RECORDING_HEADER];
    return recordingNameOf(typeof header === "string" ? header : nameOfSandbox(res), DEFAULT_RECORDING);
  };

  /** Each answer's body bytes, made once: a replay is a lookup and a write. */
  const bodies = new WeakMap<Interaction, Buffer>();
  const bodyOf = (interaction: Interaction): Buffer => {
    let body = bodies.get(interaction);
    if (!body) {
      const { response } = interaction;
      body =
        response.body !== undefined
          ? Buffer.from(JSON.stringify(response.body))
          : response.body_text !== undefined
            ? Buffer.from(response.body_text)
            : Buffer.from(response.body_base64 ?? "", "base64");
      bodies.set(interaction, body);
    }
    return body;
  };

  const serve = (res: Response, name: string, index: number, interaction: Interaction): void => {
    const { response } = interaction;
    for (const [header, value] of Object.entries(response.headers)) res.setHeader(header, value);
    res.setHeader(REPLAY_HEADER, `${name}#${index + 1}`);
    res.status(response.status);
    if (response.events) {
      res.flushHeaders();
      const frames = response.events.map((e) => ({
        at: e.at_ms,
        text: `${e.event !== undefined ? `event: ${e.event}\n` : ""}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`,
      }));
      const started = performance.now();
      const sendFrom = (i: number): void => {
        while (i < frames.length && (!pace || frames[i]!.at <= performance.now() - started)) res.write(frames[i++]!.text);
        if (i >= frames.length || res.destroyed) {
          res.end();
          return;
        }
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            sendFrom(i);
          },
          frames[i]!.at - (performance.now() - started),
        );
        timers.add(timer);
      };
      sendFrom(0);
      return;
    }
    const body = bodyOf(interaction);
    if (body.length) res.end(body);
    else res.end();
  };

  const miss = (res: Response, name: string, incoming: IncomingRequest): void => {
    const served = recordings.get(name);
    const closest = served && closestRecorded(served.recording.interactions, incoming);
    const where = served ? `recording '${name}' (${served.file})` : `recording '${name}' (no such file in ${options.dir})`;
    const hint = closest
      ? ` Closest recorded request: #${closest.index + 1} ${closest.request.method} ${closest.request.path}; differs in ${closest.differences.join("; ")}.`
      : " It holds no request.";
    res.setHeader(REPLAY_HEADER, "miss");
    res.status(404).json({ detail: `Replay (strict): no recorded answer for ${incoming.method} ${incoming.path} in ${where}.${hint}` });
  };

  /** Sends the request to the upstream; the whole answer, with a stream's event times. */
  const forward = async (req: Request): Promise<Exchange> => {
    // A JSON body was parsed by the emulator; any other (a multipart upload) is still unread.
    const body = req.is("application/json") ? (req.body !== undefined ? Buffer.from(JSON.stringify(req.body)) : Buffer.alloc(0)) : await readRaw(req);
    // The body may have been re-serialized: undici states its length.
    const { "content-length": _length, ...headers } = req.headers;
    const { exchange } = await callUpstream({
      base: options.upstream!,
      method: req.method,
      url: req.originalUrl,
      headers,
      body,
      dispatcher: dispatcher!,
      now: Date.now,
    });
    return exchange;
  };

  /** Forwards, answers with what came and, in record-if-missing, appends it. */
  const fetchAndMaybeRecord = async (req: Request, res: Response, name: string): Promise<void> => {
    let exchange: Exchange;
    try {
      exchange = await forward(req);
    } catch (error) {
      const code = failureCode(error);
      res.setHeader(REPLAY_HEADER, "upstream-unreachable");
      res.status(502).json({ detail: `Replay: the upstream ${new URL(options.upstream!).origin} could not be reached (${code}).` });
      return;
    }
    const interaction = writer ? interactionOf(exchange, scrub) : undefined;
    if (writer && interaction) {
      await writer.append(name, interaction);
      let served = recordings.get(name);
      if (!served) {
        served = new ServedRecording({ format: "agent-bridge-recording", version: 1, name, interactions: [] }, writer.fileOf(name));
        recordings.set(name, served);
      }
      served.add(interaction);
    }
    for (const [header, value] of Object.entries(exchange.responseHeaders))
      if (value !== undefined && header !== "content-length") res.setHeader(header, value);
    res.status(exchange.status).send(exchange.responseBody);
  };

  return {
    mode,
    handle(req, res, next) {
      const path = req.path;
      if (!path.startsWith("/v1/") || path === "/v1/openapi.json") return next();
      const name = nameOf(req, res);
      const incoming = incomingOf(req);
      const hit = recordings.get(name)?.take(incoming);
      if (hit) {
        const operation = operationOf(req.method, path);
        if (operation) res.locals.route = operation;
        const instance = /^\/v1\/instances\/([^/]+)/.exec(path)?.[1];
        if (instance !== undefined) res.locals.instanceId = instance;
        return serve(res, name, hit.index, hit.interaction);
      }
      if (mode === "strict") return miss(res, name, incoming);
      if (mode === "passthrough" && !options.upstream) return next();
      fetchAndMaybeRecord(req, res, name).catch(next);
    },
    usage: () => [...recordings.values()].map((r) => r.usage()).sort((a, b) => a.name.localeCompare(b.name)),
    modelScript() {
      const rules = [...recordings.values()].flatMap((r) => r.recording.model_script?.rules ?? []);
      return rules.length ? { description: `The model's answers recorded in ${options.dir}`, rules } : undefined;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await writer?.flush();
      await dispatcher?.close().catch(() => {});
    },
  };
}

async function readRaw(req: Request): Promise<Buffer> {
  if (req.readableEnded) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
