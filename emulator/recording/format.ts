/**
 * A recording: what passed between a client and the service for one test or
 * sandbox, as one JSON file a person can read, edit and review in a diff
 * (docs/testing.md, "Record, replay and drift"). Bodies are stored as JSON
 * values, not escaped strings, so a changed field is a changed line; a
 * streamed answer is its list of events, each with the milliseconds since the
 * answer's headers so a replay keeps its pace. The model's answers on message
 * calls are also written as model-script rules (`model_script`, the format of
 * `--model-script`), the part of a recording people edit by hand.
 *
 * Never in a recording: `authorization` and other credential headers (not
 * written at all) and secret values (scrubbed before writing, scrub.ts).
 */
import { z } from "zod";
import { ModelScript } from "../gateway/script/schema.js";

export const RECORDING_FORMAT = "agent-bridge-recording";
export const RECORDING_VERSION = 1;
/** The request header naming the recording a request belongs to (the proxy writes to it, replay reads from it). */
export const RECORDING_HEADER = "x-agent-bridge-recording";
/** The file a recording is kept in: `<name>.recording.json` in the recordings directory. */
export const RECORDING_SUFFIX = ".recording.json";
/** Used when a request names no recording and belongs to no sandbox. */
export const DEFAULT_RECORDING = "default";

/** A recording name: what a test would call itself, safe as a file name. */
export const RecordingName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._ -]*$/, "Letters, digits, '.', '_', '-' and spaces, starting with a letter or digit");

export const HttpMethod = z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]);
export type HttpMethod = z.infer<typeof HttpMethod>;

/** Header name (lower case) -> value. */
const RecordedHeaders = z.record(z.string().regex(/^[a-z0-9-]+$/, "Header names are written in lower case"), z.string());

export const RecordedRequest = z.strictObject({
  method: HttpMethod,
  /** The path without the query, e.g. `/v1/instances/2b1f.../status`. */
  path: z.string().startsWith("/"),
  /** Query parameters as sent (a repeated one as a list). */
  query: z.record(z.string(), z.union([z.string(), z.array(z.string())])).optional(),
  /** Headers that change the answer (content type, accept); never credentials. */
  headers: RecordedHeaders.optional(),
  /** A JSON body, as a value. */
  body: z.unknown().optional(),
  /** A body that is not JSON (a multipart upload), as text. */
  body_text: z.string().optional(),
});
export type RecordedRequest = z.infer<typeof RecordedRequest>;

export const RecordedEvent = z.strictObject({
  /** Milliseconds after the answer's headers this event arrived. */
  at_ms: z.number().int().min(0),
  /** The SSE `event:` name, when the server sent one. */
  event: z.string().optional(),
  /** The event's `data:`, as JSON when it is JSON, else as text. */
  data: z.unknown(),
});
export type RecordedEvent = z.infer<typeof RecordedEvent>;

export const RecordedResponse = z
  .strictObject({
    status: z.number().int().min(100).max(599),
    headers: RecordedHeaders,
    /** A JSON body, as a value. */
    body: z.unknown().optional(),
    /** A text body that is not JSON. */
    body_text: z.string().optional(),
    /** A binary body (a download), base64. */
    body_base64: z.string().optional(),
    /** A streamed answer (server-sent events), event by event. */
    events: z.array(RecordedEvent).optional(),
  })
  .refine((r) => [r.body, r.body_text, r.body_base64, r.events].filter((b) => b !== undefined).length <= 1, {
    message: "An answer has at most one of body, body_text, body_base64, events",
  });
export type RecordedResponse = z.infer<typeof RecordedResponse>;

export const Interaction = z.strictObject({
  request: RecordedRequest,
  response: RecordedResponse,
  /** When it was recorded. */
  recorded_at: z.iso.datetime().optional(),
  /** How long the upstream took to answer completely, ms. */
  duration_ms: z.number().int().min(0).optional(),
  /** On a message call: the name of the `model_script` rule holding the model's answer. */
  rule: z.string().optional(),
});
export type Interaction = z.infer<typeof Interaction>;

export const Recording = z.strictObject({
  format: z.literal(RECORDING_FORMAT),
  version: z.literal(RECORDING_VERSION),
  name: RecordingName,
  /** The upstream it was recorded from (origin only: never credentials or a query). */
  upstream: z.string().optional(),
  /** In the order they happened; a replay answers equal requests in this order. */
  interactions: z.array(Interaction),
  /** The model's answers as model-script rules (`--model-script` format), one per message call. */
  model_script: ModelScript.optional(),
});
export type Recording = z.infer<typeof Recording>;
export type RecordingInput = z.input<typeof Recording>;

/** The file of a recording inside a recordings directory (the name is already a safe file name). */
export const recordingFileName = (name: string): string => `${name}${RECORDING_SUFFIX}`;

export const emptyRecording = (name: string, upstream?: string): Recording => ({
  format: RECORDING_FORMAT,
  version: RECORDING_VERSION,
  name,
  ...(upstream !== undefined ? { upstream } : {}),
  interactions: [],
});

/** The text of a recording: two-space JSON, one field a line, ending in a newline (stable diffs). */
export const recordingText = (recording: RecordingInput): string => `${JSON.stringify(recording, null, 2)}\n`;
