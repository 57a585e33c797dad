/**
 * A fake Blossom media server (hzrd149/blossom BUD-01 and BUD-02) on
 * 127.0.0.1, port 0, obeying the documents, not the bridge's code:
 *
 * - `PUT /upload`: the body is the blob, kept unchanged and addressed by its
 *   SHA-256; answered with a blob descriptor `{url, sha256, size, type,
 *   uploaded}`. It needs `Authorization: Nostr <base64 event>`, checked as
 *   BUD-01 lists: kind 24242, a valid id and signature, `created_at` in the
 *   past, an `expiration` tag in the future, a `t` tag of `upload`, and
 *   (BUD-02) an `x` tag naming the blob's SHA-256. A failed check is 401 with
 *   a JSON `{message}` and an `X-Reason` header; a blob over `maxBytes` is 413.
 * - `GET /<sha256>` (an optional `.ext`): the blob with its type; `HEAD` the same
 *   without a body; an unknown hash is 404.
 * - `failNext(n, status)`: the next n uploads are answered `status` (a server fault).
 * - `tamper(sha256, bytes)`: serves other bytes under a hash (a dishonest server).
 * - `holdDownloads()`: GETs are held unanswered until `release()` (a slow server); `held()` counts them.
 * Every response carries BUD-01's CORS headers.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Event, verifyEvent } from "nostr-tools/pure";

export interface BlossomUpload {
  sha256: string;
  size: number;
  type: string | undefined;
  /** The authorization event's author. */
  pubkey: string;
}

export interface FakeBlossom {
  url: string;
  uploads(): BlossomUpload[];
  /** Refusals, with the reason each got (an upload that failed a check). */
  refusals(): { status: number; reason: string }[];
  /** Puts a blob as if someone had uploaded it (a person's client, before its kind 15). */
  put(data: Uint8Array, type?: string): { url: string; sha256: string };
  failNext(n: number, status: number): void;
  tamper(sha256: string, bytes: Uint8Array): void;
  holdDownloads(): void;
  held(): number;
  release(): void;
  close(): Promise<void>;
}

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": "Authorization,*",
  "access-control-allow-methods": "GET, HEAD, PUT, DELETE",
};

export async function createFakeBlossom(options: { maxBytes?: number } = {}): Promise<FakeBlossom> {
  const blobs = new Map<string, { data: Buffer; type: string | undefined }>();
  const uploads: BlossomUpload[] = [];
  const refusals: { status: number; reason: string }[] = [];
  let failing = 0;
  let failStatus = 500;
  let base = "";
  let holding = false;
  const heldGets: (() => void)[] = [];

  const fail = (res: ServerResponse, status: number, message: string): void => {
    refusals.push({ status, reason: message });
    res.writeHead(status, { ...CORS, "content-type": "application/json", "x-reason": message });
    res.end(JSON.stringify({ message }));
  };

  /** BUD-01's checks of an authorization event, then BUD-02's for an upload; the reason it fails, or the author. */
  function authorize(header: string | undefined, sha256: string): { ok: true; pubkey: string } | { ok: false; reason: string } {
    if (!header?.startsWith("Nostr ")) return { ok: false, reason: "Missing Auth event" };
    let event: Event;
    try {
      event = JSON.parse(Buffer.from(header.slice(6), "base64").toString("utf8")) as Event;
    } catch {
      return { ok: false, reason: "Auth event is not base64 JSON" };
    }
    const now = Math.floor(Date.now() / 1000);
    const tag = (name: string) => event.tags?.filter((t) => t[0] === name).map((t) => t[1]) ?? [];
    if (event.kind !== 24242) return { ok: false, reason: "Auth event must be kind 24242" };
    if (!verifyEvent(event)) return { ok: false, reason: "Auth event has a bad id or signature" };
    if (!(event.created_at <= now)) return { ok: false, reason: "Auth event created_at is in the future" };
    const expiration = Number(tag("expiration")[0]);
    if (!Number.isFinite(expiration) || expiration <= now) return { ok: false, reason: "Auth event is expired or has no expiration" };
    if (tag("t")[0] !== "upload") return { ok: false, reason: "Auth event t tag is not upload" };
    if (!tag("x").includes(sha256)) return { ok: false, reason: "Auth event has no x tag for this blob" };
    return { ok: true, pubkey: event.pubkey };
  }

  function keep(data: Buffer, type: string | undefined): { url: string; sha256: string } {
    const sha256 = createHash("sha256").update(data).digest("hex");
    if (!blobs.has(sha256)) blobs.set(sha256, { data, type });
    return { url: `${base}/${sha256}`, sha256 };
  }

  async function onUpload(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (options.maxBytes !== undefined && size > options.maxBytes) return fail(res, 413, "File too large");
      chunks.push(chunk as Buffer);
    }
    const data = Buffer.concat(chunks);
    const sha256 = createHash("sha256").update(data).digest("hex");
    const auth = authorize(req.headers.authorization, sha256);
    if (!auth.ok) return fail(res, 401, auth.reason);
    if (failing > 0) {
      failing--;
      return fail(res, failStatus, "server fault");
    }
    const type = req.headers["content-type"];
    const kept = keep(data, type);
    uploads.push({ sha256, size: data.length, type, pubkey: auth.pubkey });
    res.writeHead(200, { ...CORS, "content-type": "application/json" });
    res.end(JSON.stringify({ url: kept.url, sha256, size: data.length, type, uploaded: Math.floor(Date.now() / 1000) }));
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method === "PUT" && path === "/upload") {
      onUpload(req, res).catch(() => res.destroy());
      return;
    }
    const blob = /^\/([0-9a-f]{64})(\.[A-Za-z0-9]+)?$/.exec(path);
    if (req.method === "GET" && blob && holding) {
      heldGets.push(() => serve(req, res, blob[1] ?? ""));
      return;
    }
    if ((req.method === "GET" || req.method === "HEAD") && blob) return serve(req, res, blob[1] ?? "");
    fail(res, 404, "Not found");
  });
  function serve(req: IncomingMessage, res: ServerResponse, sha256: string): void {
    const found = blobs.get(sha256);
    if (!found) {
      fail(res, 404, "Blob not found");
      return;
    }
    res.writeHead(200, { ...CORS, "content-type": found.type ?? "application/octet-stream", "content-length": String(found.data.length) });
    res.end(req.method === "HEAD" ? undefined : found.data);
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    uploads: () => [...uploads],
    refusals: () => [...refusals],
    put: (data, type) => keep(Buffer.from(data), type),
    failNext: (n, status) => {
      failing = n;
      failStatus = status;
    },
    tamper: (sha256, bytes) => {
      const found = blobs.get(sha256);
      blobs.set(sha256, { data: Buffer.from(bytes), type: found?.type });
    },
    holdDownloads: () => {
      holding = true;
    },
    held: () => heldGets.length,
    release: () => {
      holding = false;
      for (const answer of heldGets.splice(0)) answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
