/**
 * Where a Nostr message's files come from: a NIP-17 kind 15 file message
 * names a URL on a server the sender chose (a Blossom server, usually) and
 * carries the key. The file is downloaded within the core's bound (the
 * project's download helper), its SHA-256 checked against the `x` tag (of
 * the bytes as served, as Blossom addresses them; the decrypted file's hash is
 * accepted there too, as some clients put it), decrypted (AES-GCM), and its
 * `ox` checked where given. An audio file is a voice note (transcribed where
 * transcription is on).
 */
import type { Logger } from "pino";
import type { InboundAttachment } from "../../vocabulary/adapter.js";
import { downloadAttachment } from "../download.js";
import type { DroppedFile, FileSource } from "../hand-over.js";
import { decryptFile, ENCRYPTION_OVERHEAD, sha256Hex } from "./file-crypto.js";
import type { NostrFileRef } from "./inbound.js";

export interface NostrFilesDeps {
  log: Logger;
  /** Aborted when the adapter stops: a download under way ends, and the message comes again in the next life (the look-back). */
  signal: AbortSignal;
  timeoutMs?: number;
}

export function nostrFiles(deps: NostrFilesDeps): FileSource<NostrFileRef> {
  const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, deps.signal]) : deps.signal });
  return {
    async fetch(ref, maxBytes) {
      const dropped = (reason: "too_large" | "unavailable", why?: string): DroppedFile => {
        if (why) deps.log.warn({ fileName: ref.fileName, why }, "nostr file not passed on");
        return { fileName: ref.fileName, reason };
      };
      const encrypted = ref.algorithm !== undefined;
      if (encrypted && ref.algorithm !== "aes-gcm") return dropped("unavailable", `encryption ${ref.algorithm} is not supported`);
      if (encrypted && (!ref.key || !ref.nonce)) return dropped("unavailable", "no decryption key or nonce");
      const bound = maxBytes + (encrypted ? ENCRYPTION_OVERHEAD : 0);
      const got = await downloadAttachment(ref.url, {
        maxBytes: bound,
        ...(ref.size !== undefined ? { reportedSize: ref.size } : {}),
        ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}),
        fetchImpl,
      });
      if (deps.signal.aborted) throw new Error("the adapter is stopping");
      if (!got.ok) return got.reason === "too_large" ? dropped("too_large") : dropped("unavailable", got.detail);
      const servedHash = sha256Hex(got.data);
      let data = got.data;
      if (encrypted) {
        const opened = decryptFile(got.data, ref.key ?? "", ref.nonce ?? "");
        if (!opened.ok) return dropped("unavailable", opened.reason);
        data = opened.data;
      }
      const plainHash = encrypted ? sha256Hex(data) : servedHash;
      // A file that is not the one the message names is not passed on: the server could have swapped it.
      if (ref.hash && ref.hash !== servedHash && ref.hash !== plainHash) return dropped("unavailable", "its SHA-256 is not the message's x");
      if (ref.originalHash && ref.originalHash !== plainHash) return dropped("unavailable", "its SHA-256 is not the message's ox");
      if (!ref.hash && !encrypted) return dropped("unavailable", "an unencrypted file without its hash");
      if (data.length > maxBytes) return dropped("too_large");
      return {
        kind: kindOf(ref.mimeType),
        fileName: ref.fileName,
        ...(ref.mimeType ? { mimeType: ref.mimeType } : {}),
        data,
      } satisfies InboundAttachment;
    },
  };
}

function kindOf(mimeType: string | undefined): InboundAttachment["kind"] {
  if (!mimeType) return "document";
  if (mimeType.startsWith("audio/")) return "audio";
  if (mimeType.startsWith("image/")) return "photo";
  if (mimeType.startsWith("video/")) return "video";
  return "document";
}
