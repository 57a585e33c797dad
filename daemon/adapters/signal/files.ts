/**
 * Where a Signal message's files come from: signal-cli has already fetched
 * and decrypted them, and `getAttachment` (id, and the sender or the group)
 * answers `{data: base64}`. It says nothing of an audio file's length, so a
 * voice note's `seconds` are read from its container (audio-seconds.ts).
 */
import type { Logger } from "pino";
import { z } from "zod";
import type { DroppedAttachment, InboundAttachment } from "../../vocabulary/adapter.js";
import type { FileSource } from "../hand-over.js";
import { audioSeconds } from "./audio-seconds.js";
import type { SignalFileRef } from "./inbound.js";
import type { RpcCall } from "./rpc.js";

const AttachmentData = z.object({ data: z.string() });

export interface SignalFilesDeps {
  rpc: RpcCall;
  log: Logger;
}

/** The files of one message; `signal` aborts when the adapter stops (a fetch under way then throws: the message stays spooled). */
export function signalFiles(deps: SignalFilesDeps, signal: AbortSignal): FileSource<SignalFileRef> {
  return {
    async fetch(ref, maxBytes) {
      const tooLarge: DroppedAttachment = { fileName: ref.fileName, reason: "too_large" };
      const unavailable: DroppedAttachment = { fileName: ref.fileName, reason: "unavailable" };
      if (ref.size !== undefined && ref.size > maxBytes) return tooLarge;
      try {
        const where = ref.groupId ? { groupId: ref.groupId } : { recipient: ref.sender };
        const got = AttachmentData.safeParse(await deps.rpc("getAttachment", { id: ref.id, ...where }, signal));
        if (!got.success) return unavailable;
        // base64 is 4 characters per 3 bytes: refuse before decoding what cannot fit.
        if ((got.data.data.length * 3) / 4 > maxBytes + 3) return tooLarge;
        const data = Buffer.from(got.data.data, "base64");
        if (data.length > maxBytes) return tooLarge;
        const seconds = ref.kind === "audio" ? audioSeconds(data) : undefined;
        return {
          kind: ref.kind,
          ...(seconds !== undefined ? { seconds } : {}),
          fileName: ref.fileName,
          ...(ref.mimeType ? { mimeType: ref.mimeType } : {}),
          data,
        } satisfies InboundAttachment;
      } catch (error) {
        if (signal.aborted) throw error;
        deps.log.warn({ fileName: ref.fileName, err: error instanceof Error ? error.message : String(error) }, "signal attachment fetch failed");
        return unavailable;
      }
    },
  };
}
