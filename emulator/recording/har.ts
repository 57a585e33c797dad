/**
 * HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) to and from a
 * recording: export so a browser's devtools or another tool can show what was
 * recorded; import so traffic captured elsewhere can seed a replay. A
 * streamed answer is exported as its server-sent-event text, with the events
 * and their times kept in `_events` (HAR's place for custom fields) so an
 * import gives the stream back with its pace. Everything imported is
 * scrubbed like a recording made by the proxy.
 */
import { z } from "zod";
import { type Exchange, interactionOf } from "./capture.js";
import type { Interaction, Recording, RecordedEvent } from "./format.js";
import type { Scrubber } from "./scrub.js";

const NameValue = z.looseObject({ name: z.string(), value: z.string() });
const HarEvent = z.looseObject({ at_ms: z.number().min(0), event: z.string().optional(), data: z.string() });

/** The parts of a HAR 1.2 log an import reads; anything else in it is allowed and ignored. */
export const HarLog = z.looseObject({
  log: z.looseObject({
    version: z.string(),
    entries: z.array(
      z.looseObject({
        startedDateTime: z.string(),
        time: z.number().min(0).optional(),
        request: z.looseObject({
          method: z.string(),
          url: z.string().refine((u) => URL.canParse(u), "Not an absolute URL"),
          headers: z.array(NameValue),
          postData: z.looseObject({ mimeType: z.string().optional(), text: z.string().optional() }).optional(),
        }),
        response: z.looseObject({
          status: z.number().int().min(100).max(599),
          headers: z.array(NameValue),
          content: z.looseObject({ mimeType: z.string().optional(), text: z.string().optional(), encoding: z.string().optional() }),
        }),
        _events: z.array(HarEvent).optional(),
      }),
    ),
  }),
});
export type HarLog = z.infer<typeof HarLog>;

const STATUS_TEXT: Record<number, string> = {
  200: "OK",
  201: "Created",
  204: "No Content",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  502: "Bad Gateway",
};

const pairs = (record: Record<string, string> | undefined) => Object.entries(record ?? {}).map(([name, value]) => ({ name, value }));
const eventText = (e: RecordedEvent): string =>
  `${e.event !== undefined ? `event: ${e.event}\n` : ""}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`;

function content(interaction: Interaction): { size: number; mimeType: string; text?: string; encoding?: string } {
  const { response } = interaction;
  const mimeType = response.headers["content-type"] ?? "";
  let text: string | undefined;
  let encoding: string | undefined;
  if (response.events) text = response.events.map(eventText).join("");
  else if (response.body !== undefined) text = JSON.stringify(response.body);
  else if (response.body_text !== undefined) text = response.body_text;
  else if (response.body_base64 !== undefined) {
    text = response.body_base64;
    encoding = "base64";
  }
  const size = text === undefined ? 0 : encoding ? Buffer.from(text, "base64").length : Buffer.byteLength(text);
  return { size, mimeType, ...(text !== undefined ? { text } : {}), ...(encoding ? { encoding } : {}) };
}

/** A recording as a HAR 1.2 log; `origin` stands in for the upstream in URLs (default the recorded one, else `http://localhost`). */
export function recordingToHar(recording: Recording, options: { origin?: string; version?: string } = {}): Record<string, unknown> {
  const origin = (options.origin ?? recording.upstream ?? "http://localhost").replace(/\/+$/, "");
  const entries = recording.interactions.map((interaction) => {
    const { request, response } = interaction;
    const url = new URL(origin + request.path);
    const queryString: { name: string; value: string }[] = [];
    for (const [name, value] of Object.entries(request.query ?? {}))
      for (const v of Array.isArray(value) ? value : [value]) queryString.push({ name, value: v });
    for (const { name, value } of queryString) url.searchParams.append(name, value);
    const body = request.body !== undefined ? JSON.stringify(request.body) : request.body_text;
    const responseContent = content(interaction);
    const duration = interaction.duration_ms ?? 0;
    return {
      startedDateTime: interaction.recorded_at ?? new Date(0).toISOString(),
      time: duration,
      request: {
        method: request.method,
        url: url.toString(),
        httpVersion: "HTTP/1.1",
        cookies: [],
        headers: pairs(request.headers),
        queryString,
        ...(body !== undefined ? { postData: { mimeType: request.headers?.["content-type"] ?? "application/json", text: body } } : {}),
        headersSize: -1,
        bodySize: body === undefined ? 0 : Buffer.byteLength(body),
      },
      response: {
        status: response.status,
        statusText: STATUS_TEXT[response.status] ?? "",
        httpVersion: "HTTP/1.1",
        cookies: [],
        headers: pairs(response.headers),
        content: responseContent,
        redirectURL: "",
        headersSize: -1,
        bodySize: responseContent.size,
      },
      cache: {},
      timings: { send: 0, wait: duration, receive: 0 },
      ...(response.events
        ? {
            _events: response.events.map((e) => ({
              at_ms: e.at_ms,
              ...(e.event !== undefined ? { event: e.event } : {}),
              data: typeof e.data === "string" ? e.data : JSON.stringify(e.data),
            })),
          }
        : {}),
    };
  });
  return { log: { version: "1.2", creator: { name: "agent-bridge", version: options.version ?? "0.1.0" }, comment: `recording '${recording.name}'`, entries } };
}

export interface HarImport {
  interactions: Interaction[];
  /** Entries left out: not a `/v1` request. */
  skipped: number;
}

/** The `/v1` entries of a HAR log as interactions, scrubbed (entries elsewhere are skipped and counted). */
export function harToInteractions(har: HarLog, scrub: Scrubber): HarImport {
  const interactions: Interaction[] = [];
  let skipped = 0;
  for (const entry of har.log.entries) {
    const url = new URL(entry.request.url);
    if (!url.pathname.startsWith("/v1/")) {
      skipped++;
      continue;
    }
    const headersOf = (list: { name: string; value: string }[]) => Object.fromEntries(list.map((h) => [h.name.toLowerCase(), h.value]));
    const requestHeaders = headersOf(entry.request.headers);
    if (entry.request.postData?.mimeType && !requestHeaders["content-type"]) requestHeaders["content-type"] = entry.request.postData.mimeType;
    const responseHeaders = headersOf(entry.response.headers);
    if (entry.response.content.mimeType && !responseHeaders["content-type"]) responseHeaders["content-type"] = entry.response.content.mimeType;
    const text = entry.response.content.text ?? "";
    const responseBody = entry.response.content.encoding === "base64" ? Buffer.from(text, "base64") : Buffer.from(text);
    const streamed = (responseHeaders["content-type"] ?? "").startsWith("text/event-stream");
    const exchange: Exchange = {
      method: entry.request.method,
      url: url.pathname + url.search,
      requestHeaders,
      requestBody: Buffer.from(entry.request.postData?.text ?? ""),
      status: entry.response.status,
      responseHeaders,
      responseBody,
      ...(streamed ? { events: entry._events ?? parseEvents(text) } : {}),
      recordedAt: entry.startedDateTime,
      durationMs: entry.time ?? 0,
    };
    const interaction = interactionOf(exchange, scrub);
    if (interaction) interactions.push(interaction);
    else skipped++;
  }
  return { interactions, skipped };
}

/** Events of an SSE text with no times of their own (a HAR from another tool): all at 0 ms. */
function parseEvents(text: string): { at_ms: number; event?: string; data: string }[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split(/\r?\n/);
      const event = lines
        .find((l) => l.startsWith("event:"))
        ?.slice(6)
        .trim();
      const data = lines
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      return { at_ms: 0, ...(event !== undefined ? { event } : {}), data };
    });
}
