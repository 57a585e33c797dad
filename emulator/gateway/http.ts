/** The gateway's HTTP plumbing: reading a bounded body, answering JSON and OpenAI-style errors. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GatewayError } from "./reply.js";
import { errorBody } from "./wire.js";

/** Bodies carry a turn's text; 16 MiB is far above anything the emulator forwards (1 MiB). */
export const BODY_LIMIT = 16 * 1024 * 1024;

type Body = { ok: true; body: Buffer } | { ok: false; reason: "too_large" | "aborted" };

export function readBody(req: IncomingMessage): Promise<Body> {
  return new Promise((resolve) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > BODY_LIMIT) {
      resolve({ ok: false, reason: "too_large" });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: Body) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on("data", (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > BODY_LIMIT) {
        req.pause();
        settle({ ok: false, reason: "too_large" });
      } else chunks.push(chunk);
    });
    req.on("end", () => settle({ ok: true, body: Buffer.concat(chunks, size) }));
    req.on("error", () => settle({ ok: false, reason: "aborted" }));
    req.on("close", () => settle({ ok: false, reason: "aborted" }));
  });
}

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
