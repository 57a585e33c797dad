/** The gateway's HTTP plumbing: reading a bounded body, answering JSON and OpenAI-style errors. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayError } from "./reply.js";
import { errorBody } from "./wire.js";
import { type BodyRead, readBody as readSharedBody } from "../../shared/http/read-body.js";

/** Bodies carry a turn's text; 16 MiB is far above anything the emulator forwards (1 MiB). */
export const BODY_LIMIT = 16 * 1024 * 1024;

/** The shared bounded reader at the gateway's limit. */
export const readBody = (req: IncomingMessage): Promise<BodyRead> => readSharedBody(req, { maxBytes: BODY_LIMIT });

export const gone = (res: ServerResponse): boolean => res.destroyed || res.writableEnded;

export function sendJson(res: ServerResponse, status: number, body: string, close = false): void {
  if (gone(res)) return;
  const headers: Record<string, string | number> = {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  };
  // After a refused oversized body the rest of it is not worth reading.
  if (close) headers.connection = "close";
  res.writeHead(status, headers);
  res.end(body);
}

export function sendError(res: ServerResponse, error: GatewayError, close = false): void {
  if (error.retryAfter !== undefined && !gone(res)) {
    // Both forms: `retry-after` in whole seconds as HTTP defines it, `-ms` exactly (the OpenAI SDKs read it first).
    res.setHeader("retry-after", String(Math.ceil(error.retryAfter)));
    res.setHeader("retry-after-ms", String(Math.round(error.retryAfter * 1000)));
  }
  sendJson(res, error.status, errorBody(error), close);
}

/** Resolves once the response can take more data, or is gone. */
export function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
