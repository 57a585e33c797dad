/**
 * The fake gateway's speech-to-text endpoint, `POST /v1/audio/transcriptions`
 * in OpenAI's form (multipart `file`, `model`, optional `language` and
 * `response_format`), so the daemon's voice notes can be transcribed without
 * a network. Deterministic, as docs/emulator.md says:
 *
 * - a file whose bytes are UTF-8 text is "heard" as that text (a test's voice
 *   note says exactly what it should), with two directives on its first line:
 *   `!fail STATUS` answers that HTTP error, `!sleep MS` waits MS ms on the
 *   gateway's clock (ended when the client leaves) and then hears the rest;
 * - any other file (real audio) is heard as one sentence naming its size and
 *   the start of its SHA-256, the same for the same bytes.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import busboy from "busboy";
import type { Clock } from "../../shared/clock.js";
import { BODY_LIMIT, readBody, sendError, sendJson } from "./http.js";
import type { GatewayError } from "./reply.js";
import { invalid } from "./request.js";

export const TRANSCRIPTION_PATH = "/v1/audio/transcriptions";

/** Whether a request is for this endpoint (any method: a wrong one is answered 405 here). */
export const isTranscriptionRequest = (url: string | undefined): boolean => (url ?? "").split("?")[0] === TRANSCRIPTION_PATH;

interface Form {
  file?: { name: string; type: string; data: Buffer };
  fields: Map<string, string>;
}

/** What a file is heard as, or the error a directive asks for. Pure. */
export function hear(data: Buffer, mimeType: string): { kind: "text"; text: string; sleepMs: number } | { kind: "error"; status: number } {
  const text = utf8Text(data);
  if (text === undefined) {
    const hash = createHash("sha256").update(data).digest("hex").slice(0, 12);
    return { kind: "text", text: `(The emulator heard ${data.length} bytes of ${mimeType || "audio"}, sha256 ${hash}.)`, sleepMs: 0 };
  }
  const [first = "", ...rest] = text.split("\n");
  const fail = /^!fail (\d{3})\s*$/.exec(first);
  if (fail) return { kind: "error", status: Math.min(599, Math.max(400, Number(fail[1]))) };
  const sleep = /^!sleep (\d{1,9})\s*$/.exec(first);
  if (sleep) return { kind: "text", text: rest.join("\n").trim(), sleepMs: Number(sleep[1]) };
  return { kind: "text", text: text.trim(), sleepMs: 0 };
}

/** The bytes as text when they are valid UTF-8 without control characters other than white space; else undefined. */
function utf8Text(data: Buffer): string | undefined {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(data);
  } catch {
    return undefined;
  }
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text) ? undefined : text;
}

const FORMATS = new Set(["json", "text", "verbose_json"]);

export async function handleTranscription(req: IncomingMessage, res: ServerResponse, clock: Clock): Promise<void> {
  if (req.method !== "POST") {
    res.setHeader("allow", "POST");
    sendError(res, invalid("method_not_allowed", null, `Method ${req.method ?? "?"} not allowed on ${TRANSCRIPTION_PATH}.`, 405));
    return;
  }
  const form = await readForm(req);
  if ("status" in form) return sendError(res, form, form.status === 413);
  const { file, fields } = form;
  if (!file) return sendError(res, invalid("missing_file", "file", "A 'file' part with the audio is required."));
  if (!fields.get("model")) return sendError(res, invalid("missing_model", "model", "A 'model' field is required."));
  const format = fields.get("response_format") ?? "json";
  if (!FORMATS.has(format)) return sendError(res, invalid("invalid_value", "response_format", "response_format must be json, text or verbose_json."));
  const heard = hear(file.data, file.type);
  if (heard.kind === "error") {
    const error: GatewayError = {
      status: heard.status,
      type: heard.status < 500 ? "invalid_request_error" : "server_error",
      code: "injected_fault",
      param: null,
      message: `Injected transcription fault (status ${heard.status}).`,
    };
    return sendError(res, error);
  }
  if (heard.sleepMs > 0) {
    const left = new AbortController();
    res.on("close", () => left.abort());
    try {
      await clock.sleep(heard.sleepMs, left.signal);
    } catch {
      return; // the client left
    }
  }
  if (format === "text") {
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    res.end(heard.text);
    return;
  }
  const language = fields.get("language") ?? "en";
  const body = format === "json" ? { text: heard.text } : { task: "transcribe", language, duration: 0, text: heard.text, segments: [] };
  sendJson(res, 200, JSON.stringify(body));
}

/** The multipart body: its first `file` part and its fields; an error when it is not one. */
async function readForm(req: IncomingMessage): Promise<Form | GatewayError> {
  if (!/^multipart\/form-data\b/i.test(req.headers["content-type"] ?? "")) {
    req.resume();
    return invalid("invalid_content_type", null, "The body must be multipart/form-data with a 'file' part and a 'model' field.");
  }
  const body = await readBody(req);
  if (!body.ok) return invalid("request_too_large", "file", `Request body exceeds ${BODY_LIMIT} bytes.`, 413);
  return new Promise<Form | GatewayError>((resolve) => {
    const form: Form = { fields: new Map() };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fields: 16, fieldSize: 4096 } });
    } catch {
      resolve(invalid("invalid_content_type", null, "Malformed multipart/form-data request (no boundary)."));
      return;
    }
    parser.on("field", (name, value) => form.fields.set(name, value));
    parser.on("file", (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (name === "file" && !form.file) form.file = { name: info.filename ?? "audio", type: info.mimeType, data: Buffer.concat(chunks) };
      });
    });
    parser.on("close", () => resolve(form));
    parser.on("error", () => resolve(invalid("invalid_body", null, "Malformed multipart/form-data body.")));
    parser.end(body.body);
  });
}
