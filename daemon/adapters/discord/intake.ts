/**
 * Hands translated messages to the core: per channel in the order Discord
 * sent them (channels side by side), attachments fetched only once the core
 * admits the message and only the files it wants. Discord never delivers a
 * message twice, so every message is journaled or refused by the core, which
 * tells the person; nothing here waits for a redelivery.
 */
import type { Logger } from "pino";
import type { AdapterStatusEvent, AdmissionAnswer, DroppedAttachment, InboundAttachment, InboundMessage, InboundSink } from "../../core/adapter.js";
import { createSerialQueue } from "../../core/retry.js";
import { downloadAttachment } from "../download.js";
import { errorText } from "./outbound.js";
import { attachmentKind, safeFileName, type DiscordAttachmentView } from "./inbound.js";

export interface IntakeDeps {
  log: Logger;
  /** Removes the token from any text before it reaches a log. */
  redact(text: string): string;
  /** Longest one attachment download may take, ms. */
  attachmentTimeoutMs: number;
}

/** The files a message carries, as the core wants them. */
interface FetchedFiles {
  files: InboundAttachment[];
  dropped: DroppedAttachment[];
}

export class DiscordIntake {
  readonly #deps: IntakeDeps;
  /** Set by `open` (the adapter's start); until then messages are dropped, as there is no core to take them. */
  #sink: InboundSink | null = null;
  /** One chain per channel: a channel's messages reach the core in order, each after the one before settled. */
  readonly #chains = createSerialQueue<string>();

  constructor(deps: IntakeDeps) {
    this.#deps = deps;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  /** Queues `message` behind its channel's earlier ones; a failure is logged, never thrown. */
  take(message: InboundMessage, attachments: readonly DiscordAttachmentView[]): void {
    this.#chains
      .run(message.chatId, () => this.#deliver(message, attachments))
      .catch((error: unknown) => {
        this.#deps.log.error({ chatId: message.chatId, err: this.#deps.redact(errorText(error)) }, "discord message not handed to the core");
      });
  }

  /** Passes connection news on to the core (none before `open`). */
  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /** Resolves once every message taken so far has reached the core. */
  idle(): Promise<void> {
    return this.#chains.idle();
  }

  async #deliver(message: InboundMessage, attachments: readonly DiscordAttachmentView[]): Promise<void> {
    const sink = this.#sink;
    if (!sink) return;
    if (attachments.length > 0) {
      // Strangers' files are not fetched: the core says whether it would take the message, and which sizes.
      const admission = sink.admit({ message, attachmentSizes: attachments.map((a) => a.size) });
      if (admission.allowed) {
        const { files, dropped } = await this.#fetch(message.messageId, attachments, admission.attachments);
        if (files.length > 0) message.attachments = files;
        // The core tells the sender, once the message is journaled.
        if (dropped.length > 0) message.droppedAttachments = dropped;
      }
      if (!message.text && !message.attachments && !message.droppedAttachments) return;
    }
    await sink.accept(message);
  }

  async #fetch(messageId: string, attachments: readonly DiscordAttachmentView[], admitted: AdmissionAnswer["attachments"]): Promise<FetchedFiles> {
    const fetched: FetchedFiles = { files: [], dropped: [] };
    for (const [i, attachment] of attachments.entries()) {
      const fileName = safeFileName(attachment.name, attachment.id);
      const verdict = admitted[i];
      if (!verdict?.fetch) {
        fetched.dropped.push({ fileName, reason: verdict?.reason ?? "disabled" });
        continue;
      }
      const result = await downloadAttachment(attachment.url, {
        maxBytes: verdict.maxBytes,
        reportedSize: attachment.size,
        timeoutMs: this.#deps.attachmentTimeoutMs,
      });
      if (result.ok) {
        const mimeType = attachment.contentType ?? result.contentType;
        const seconds = attachment.duration ?? undefined;
        fetched.files.push({
          kind: attachmentKind(attachment.contentType),
          fileName,
          data: result.data,
          ...(mimeType ? { mimeType } : {}),
          ...(seconds !== undefined ? { seconds } : {}),
        });
      } else if (result.reason === "too_large") {
        fetched.dropped.push({ fileName, reason: "too_large" });
      } else {
        this.#deps.log.warn({ messageId, fileName, detail: result.detail }, "discord attachment download failed");
        fetched.dropped.push({ fileName, reason: "unavailable" });
      }
    }
    return fetched;
  }
}
