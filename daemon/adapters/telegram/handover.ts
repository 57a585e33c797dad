/**
 * One update handed to the core, the same for polling and webhook:
 * translate (inbound.ts) -> ask the core which files it wants -> download
 * them -> `sink.accept`. Resolves once the core has the message (or it is not
 * for the core); rejects when Telegram must deliver it again (the core
 * deferred it, the journal failed, the adapter is stopping mid-download).
 */
import type { Api } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import type { Logger } from "pino";
import type { AdmissionAnswer, DroppedAttachment, InboundAttachment, InboundMessage, InboundSink } from "../../core/adapter.js";
import { downloadAttachment } from "../download.js";
import { describe, isFileTooBig, type Scrub } from "./errors.js";
import { toApiSignal } from "./fetch.js";
import { fileRefsOf, translateMessage, type FileRef } from "./inbound.js";

/** Where an update goes, known once the adapter started (`sink`) and Telegram said who the bot is (`bot`). */
export interface HandoverContext {
  bot: UserFromGetMe;
  sink: InboundSink;
  /** Aborted when the adapter stops: a download under way ends, and the update must come again. */
  signal: AbortSignal;
}

export interface HandoverDeps {
  api: Api;
  /** The channel's account id, token and Bot API root (file downloads are under `${apiRoot}/file/bot${token}/`). */
  channel: { id: string; token: string; apiRoot: string };
  log: Logger;
  scrub: Scrub;
  /** Per attachment download, ms. */
  attachmentTimeoutMs: number;
}

/** Hands `update` to `to.sink`; rejects when it must come again (nothing is acknowledged then). */
export type HandOver = (update: Update, to: HandoverContext | undefined) => Promise<void>;

type Verdict = AdmissionAnswer["attachments"][number] | undefined;

export function createHandover(deps: HandoverDeps): HandOver {
  const { api, channel, log, scrub } = deps;

  return async function handOver(update, to) {
    const message = update.message;
    if (!message) return;
    if (!to) throw new Error("not connected yet");
    const inbound = translateMessage(message, to.bot, channel.id);
    if (!inbound) return;
    await attachFiles(inbound, fileRefsOf(message), to);
    if (!inbound.text.trim() && !inbound.attachments?.length && !inbound.droppedAttachments?.length) return;
    const outcome = await to.sink.accept(inbound);
    // Not acknowledged (busy, stopping): the offset stays, and Telegram hands it over again.
    if (!outcome.acknowledge) throw new Error(`not taken now (${outcome.reason}); Telegram will deliver it again`);
  };

  /** Strangers' files are not fetched: the core says whether it would take the message, and which files. */
  async function attachFiles(inbound: InboundMessage, refs: FileRef[], to: HandoverContext): Promise<void> {
    if (!refs.length) return;
    const admission = to.sink.admit({ message: inbound, attachmentSizes: refs.map((r) => r.size) });
    if (!admission.allowed) return;
    const files: InboundAttachment[] = [];
    const dropped: DroppedAttachment[] = [];
    for (const [i, ref] of refs.entries()) {
      const result = await download(ref, admission.attachments[i], to.signal);
      if ("reason" in result) dropped.push(result);
      else files.push(result);
    }
    if (files.length) inbound.attachments = files;
    // The core tells the sender, once the message is journaled.
    if (dropped.length) inbound.droppedAttachments = dropped;
  }

  /** The file, or why it was not passed on (the core tells the sender). Throws only when stopping. */
  async function download(ref: FileRef, verdict: Verdict, signal: AbortSignal): Promise<InboundAttachment | DroppedAttachment> {
    if (!verdict?.fetch) return { fileName: ref.fileName, reason: verdict?.reason ?? "disabled" };
    const tooLarge: DroppedAttachment = { fileName: ref.fileName, reason: "too_large" };
    const unavailable: DroppedAttachment = { fileName: ref.fileName, reason: "unavailable" };
    try {
      const file = await api.getFile(ref.fileId, toApiSignal(signal));
      if (!file.file_path) return unavailable;
      const path = file.file_path.split("/").map(encodeURIComponent).join("/");
      const result = await downloadAttachment(`${channel.apiRoot}/file/bot${channel.token}/${path}`, {
        maxBytes: verdict.maxBytes,
        ...(file.file_size !== undefined ? { reportedSize: file.file_size } : {}),
        timeoutMs: deps.attachmentTimeoutMs,
      });
      if (result.ok)
        return {
          kind: ref.kind,
          fileName: ref.fileName,
          ...(ref.mimeType ? { mimeType: ref.mimeType } : {}),
          ...(ref.seconds !== undefined ? { seconds: ref.seconds } : {}),
          data: result.data,
        };
      if (result.reason === "too_large") return tooLarge;
      if (signal.aborted) throw new Error("stopped");
      log.warn({ fileName: ref.fileName, err: scrub(result.detail) }, "telegram attachment download failed");
    } catch (error) {
      // Stopping mid-download: the update must come again, not go through without its file.
      if (signal.aborted) throw error;
      if (isFileTooBig(error)) return tooLarge;
      log.warn({ fileName: ref.fileName, err: describe(error, scrub) }, "telegram attachment download failed");
    }
    return unavailable;
  }
}
