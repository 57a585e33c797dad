/**
 * The one size-limited request-body reader (daemon endpoints, the emulator's
 * gateway and proxy): the body as bytes, or why there is none. A body larger
 * than `maxBytes` (declared or sent) is not read further; the caller answers
 * 413 in its own contract's format.
 */
import type { IncomingMessage } from "node:http";

export type BodyRead = { ok: true; body: Buffer } | { ok: false; reason: "too_large" | "aborted" };

export function readBody(req: IncomingMessage, options: { maxBytes: number }): Promise<BodyRead> {
  const { maxBytes } = options;
  return new Promise((resolve) => {
    if (Number(req.headers["content-length"]) > maxBytes) {
      resolve({ ok: false, reason: "too_large" });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: BodyRead) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on("data", (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > maxBytes) {
        req.pause();
        settle({ ok: false, reason: "too_large" });
      } else chunks.push(chunk);
    });
    req.on("end", () => settle({ ok: true, body: Buffer.concat(chunks, size) }));
    req.on("error", () => settle({ ok: false, reason: "aborted" }));
    req.on("close", () => settle({ ok: false, reason: "aborted" }));
  });
}
