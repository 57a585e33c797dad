/**
 * The file route on a channel's own endpoint (../webhook.ts `routes`): GET
 * and HEAD of `<prefix>/<token>/<name>` answer the one file the token stands
 * for, with its type, a Content-Disposition naming it (inline for raster
 * images, audio and video a platform shows; an attachment otherwise), a
 * Content-Security-Policy under which it runs no script, and one byte
 * range when asked (206, or 416 past the end; several ranges, or a range
 * whose If-Range is not this file's ETag, are answered whole, as RFC 9110
 * allows and requires). Anything else under the prefix, an unknown or
 * expired token included, is 404 with no body: nothing under it is listable
 * and a wrong guess learns nothing. The name segment is for the person who
 * downloads (it is not checked). `<prefix>/probe` (never a token: those are
 * 43 characters) answers 204 with `x-agent-bridge-files`, so `check` can tell
 * that the public URL reaches this route. Closing the endpoint cuts the
 * downloads under way (`close`): a client that stopped reading would otherwise
 * hold the endpoint open for as long as it liked.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import type { Clock } from "../../../shared/clock.js";
import type { PrefixRoute } from "../webhook.js";
import type { FileStore } from "../../vocabulary/file-store.js";
import { PROBE_HEADER, PROBE_PATH } from "./config.js";

/** `store`: the channel's store once it is open (undefined before: every request is 404). */
export function fileRoute(prefix: string, store: () => FileStore | undefined, clock: Clock): PrefixRoute {
  /** The requests under way, from their arrival: one still looking its file up when the endpoint closes would start its download after. */
  const underWay = new Set<ServerResponse>();
  const answer = async (req: IncomingMessage, res: ServerResponse, rest: string): Promise<void> => {
    const method = req.method ?? "";
    if (rest === PROBE_PATH && (method === "GET" || method === "HEAD"))
      return void res.writeHead(204, { "cache-control": "no-store", [PROBE_HEADER]: "1" }).end();
    const token = /^([^/]+)(?:\/[^/]+)?$/.exec(rest)?.[1];
    const found = token === undefined ? undefined : await store()?.find(token);
    if (!found) return void res.writeHead(404, { "cache-control": "no-store" }).end();
    if (method !== "GET" && method !== "HEAD") return void res.writeHead(405, { allow: "GET, HEAD" }).end();
    const { meta } = found;
    const headers: Record<string, string> = {
      "content-type": meta.mimeType,
      "content-disposition": dispositionOf(meta.fileName, meta.mimeType),
      "accept-ranges": "bytes",
      "cache-control": `private, max-age=${Math.max(0, Math.floor((meta.expiresAt - clock.now()) / 1000))}`,
      "x-content-type-options": "nosniff",
      // A browser that opens the link runs nothing from it on this origin (the policy raw.githubusercontent.com serves files with).
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
      "referrer-policy": "no-referrer",
      etag: `"${token?.slice(0, 16)}"`,
    };
    // An If-Range naming anything but this file's ETag (strongly) means the client holds another version: the whole file (RFC 9110 13.1.5).
    const ifRange = req.headers["if-range"];
    const range = ifRange === undefined || ifRange === headers.etag ? rangeOf(req.headers.range, meta.size) : undefined;
    if (range === "unsatisfiable") return void res.writeHead(416, { ...headers, "content-range": `bytes */${meta.size}` }).end();
    const [start, end] = range ?? [0, meta.size - 1];
    const length = meta.size === 0 ? 0 : end - start + 1;
    res.writeHead(range ? 206 : 200, {
      ...headers,
      "content-length": String(length),
      ...(range ? { "content-range": `bytes ${start}-${end}/${meta.size}` } : {}),
    });
    if (method === "HEAD" || length === 0) return void res.end();
    await pipeline(found.read(start, end), res).catch(() => {
      // The platform went away mid-file (or the endpoint closed): nothing to answer any more.
      res.destroy();
    });
  };
  return {
    prefix,
    close() {
      for (const res of underWay) res.destroy();
    },
    async serve(req, res, rest) {
      underWay.add(res);
      try {
        await answer(req, res, rest);
      } finally {
        underWay.delete(res);
      }
    },
  };
}

/** Types a platform shows in place (raster images: an SVG can carry script); everything else downloads as a file. */
const INLINE = /^(image\/(png|jpeg|gif|webp)|audio\/|video\/)/i;

export function dispositionOf(fileName: string, mimeType: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `${INLINE.test(mimeType) ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
}

/** One `bytes=` range within `size`: undefined (answer whole), the inclusive bounds, or unsatisfiable. */
export function rangeOf(header: string | undefined, size: number): [number, number] | undefined | "unsatisfiable" {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header?.trim() ?? "");
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return [start, end];
}
