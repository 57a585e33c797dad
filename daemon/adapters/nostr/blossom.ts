/**
 * Uploads the bot's encrypted files to Blossom servers (BUD-01/02): `PUT
 * /upload` with the bytes as the body and a kind 24242 authorization event
 * (`t` upload, `x` the blob's SHA-256, a NIP-40 `expiration`) signed by the
 * bot, base64 in `Authorization: Nostr ...`; the answer is a blob descriptor
 * whose `sha256` must be the blob's. Blossom rather than NIP-96: the clients
 * people use for NIP-17 (Amethyst, 0xchat) upload DM files to Blossom servers
 * and read any http(s) URL, and NIP-96 is marked unrecommended in favour of
 * Blossom. Servers are tried in order; the first that keeps the blob wins.
 */
import { finalizeEvent } from "nostr-tools/pure";
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import { SendError } from "../../vocabulary/adapter.js";
import { sha256Hex } from "./file-crypto.js";

const BlobDescriptor = z.object({ url: z.url(), sha256: z.string() });

export interface BlossomDeps {
  servers: readonly string[];
  secretKey: Uint8Array;
  clock: Clock;
  fetchImpl?: typeof fetch;
  timeoutMs?: number;
}

/** How long an authorization event is good for: the upload's own time, with room. */
const AUTH_SECONDS = 300;

export interface Uploaded {
  url: string;
  sha256: string;
  server: string;
}

export function createBlossomUploader(deps: BlossomDeps) {
  const fetchImpl = deps.fetchImpl ?? fetch;

  function authorization(hash: string, name: string): string {
    const now = Math.floor(deps.clock.now() / 1000);
    const event = finalizeEvent(
      {
        kind: 24242,
        created_at: now,
        content: `Upload ${name}`,
        tags: [
          ["t", "upload"],
          ["x", hash],
          ["expiration", String(now + AUTH_SECONDS)],
        ],
      },
      deps.secretKey,
    );
    return `Nostr ${Buffer.from(JSON.stringify(event)).toString("base64")}`;
  }

  /** One server's answer: the blob's URL, or why not and whether another try could help. */
  async function uploadTo(
    server: string,
    data: Buffer,
    hash: string,
    name: string,
  ): Promise<Uploaded | { reason: string; permanent: boolean; retryAfterMs?: number }> {
    let response: Response;
    try {
      response = await fetchImpl(`${server}/upload`, {
        method: "PUT",
        headers: { authorization: authorization(hash, name), "content-type": "application/octet-stream" },
        body: new Uint8Array(data),
        signal: AbortSignal.timeout(deps.timeoutMs ?? 60_000),
      });
    } catch (error) {
      return { reason: `${server}: ${error instanceof Error ? error.message : String(error)}`, permanent: false };
    }
    const body = await response.text().catch(() => "");
    if (!response.ok) {
      const said = response.headers.get("x-reason") ?? response.headers.get("blossom-upload-message") ?? messageOf(body);
      const reason = `${server}: HTTP ${response.status}${said ? ` ${said.slice(0, 200)}` : ""}`;
      if (response.status === 429) {
        const seconds = Number(response.headers.get("retry-after"));
        return { reason, permanent: false, ...(Number.isFinite(seconds) && seconds > 0 ? { retryAfterMs: seconds * 1000 } : {}) };
      }
      return { reason, permanent: response.status >= 400 && response.status < 500 };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    const descriptor = BlobDescriptor.safeParse(parsed);
    if (!descriptor.success) return { reason: `${server}: not a blob descriptor`, permanent: false };
    // The server must keep the bytes as they are (BUD-02): another hash is another file.
    if (descriptor.data.sha256.toLowerCase() !== hash) return { reason: `${server}: kept a blob of another hash`, permanent: false };
    return { url: descriptor.data.url, sha256: hash, server };
  }

  return {
    /** Uploads `data` (already encrypted) to the first server that keeps it; a SendError when none does. */
    async upload(data: Buffer, name: string): Promise<Uploaded> {
      const hash = sha256Hex(data);
      const failures: { reason: string; permanent: boolean; retryAfterMs?: number }[] = [];
      for (const server of deps.servers) {
        const got = await uploadTo(server, data, hash, name);
        if ("url" in got) return got;
        failures.push(got);
      }
      const summary = failures.map((f) => f.reason).join("; ");
      const retryAfterMs = failures.find((f) => f.retryAfterMs !== undefined)?.retryAfterMs;
      return Promise.reject(
        new SendError(`no Blossom server took the file (${summary})`, {
          permanent: failures.length > 0 && failures.every((f) => f.permanent),
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        }),
      );
    },
  };
}

function messageOf(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const message = z.object({ message: z.string() }).safeParse(parsed);
    return message.success ? message.data.message : undefined;
  } catch {
    return undefined;
  }
}
