/**
 * Hands translated Slack messages to the core: per chat in the order Slack
 * sent them (chats side by side), files fetched (`url_private_download`, with
 * the bot token) only once the core admits the message and only those it
 * wants. Resolves with the core's outcome, so the caller acknowledges to
 * Slack only what is journaled or deliberately refused.
 */
import type { Logger } from "pino";
import type {
  AcceptOutcome,
  AdapterStatusEvent,
  AdmissionAnswer,
  DroppedAttachment,
  InboundAttachment,
  InboundMessage,
  InboundSink,
} from "../../core/adapter.js";
import { createSerialQueue } from "../../core/retry.js";
import { downloadAttachment } from "../download.js";
import { attachmentKind, safeFileName, type SlackFile } from "./inbound.js";

export interface IntakeDeps {
  log: Logger;
  /** Removes tokens from any text before it reaches a log. */
  redact(text: string): string;
  /** The bot token: Slack serves `url_private` files only to it. */
  botToken: string;
  /** Longest one file download may take, ms. */
  attachmentTimeoutMs: number;
  /** Told of every message the core took (to remember the threads the bot answers in). */
  onAccepted?(message: InboundMessage): void;
}

interface FetchedFiles {
  files: InboundAttachment[];
  dropped: DroppedAttachment[];
}

export class SlackIntake {
  readonly #deps: IntakeDeps;
  /** Set by `open` (the adapter's start); until then nothing reaches a core. */
  #sink: InboundSink | null = null;
  /** One chain per chat: a chat's messages reach the core in order, each after the one before settled. */
  readonly #chains = createSerialQueue<string>();

  constructor(deps: IntakeDeps) {
    this.#deps = deps;
  }

  open(sink: InboundSink): void {
    this.#sink = sink;
  }

  /** Passes connection news on to the core (none before `open`). */
  status(event: AdapterStatusEvent): void {
    this.#sink?.status(event);
  }

  /**
   * Queues `message` behind its chat's earlier ones; resolves with what the
   * core made of it (undefined: not handed over, as there was nothing to hand),
   * rejects when the core could not take it (do not acknowledge).
   */
  take(message: InboundMessage, files: readonly SlackFile[]): Promise<AcceptOutcome | undefined> {
    return this.#chains.run(message.chatId, () => this.#deliver(message, files));
  }

  /** Resolves once every message taken so far has reached the core. */
  idle(): Promise<void> {
    return this.#chains.idle();
  }

  async #deliver(message: InboundMessage, files: readonly SlackFile[]): Promise<AcceptOutcome | undefined> {
    const sink = this.#sink;
    if (!sink) throw new Error("slack intake is not open");
    if (files.length > 0) {
      // Strangers' files are not fetched: the core says whether it would take the message, and which sizes.
      const admission = sink.admit({ message, attachmentSizes: files.map((f) => f.size ?? undefined) });
      if (admission.allowed) {
        const { files: fetched, dropped } = await this.#fetch(message.messageId, files, admission.attachments);
        if (fetched.length > 0) message.attachments = fetched;
        if (dropped.length > 0) message.droppedAttachments = dropped;
      }
      if (!message.text && !message.attachments && !message.droppedAttachments) return undefined;
    }
    const outcome = await sink.accept(message);
    if (outcome.status === "accepted") this.#deps.onAccepted?.(message);
    return outcome;
  }

  async #fetch(messageId: string, files: readonly SlackFile[], admitted: AdmissionAnswer["attachments"]): Promise<FetchedFiles> {
    const fetched: FetchedFiles = { files: [], dropped: [] };
    const authorization = `Bearer ${this.#deps.botToken}`;
    // Slack answers an unauthenticated request with its sign-in page: the bot token goes with each download.
    const withToken: typeof fetch = (input, init) => fetch(input, { ...init, headers: { authorization } });
    for (const [i, file] of files.entries()) {
      const fileName = safeFileName(file);
      const verdict = admitted[i];
      const url = file.url_private_download ?? file.url_private;
      if (!verdict?.fetch || !url) {
        fetched.dropped.push({ fileName, reason: verdict && !verdict.fetch ? verdict.reason : url ? "disabled" : "unavailable" });
        continue;
      }
      const result = await downloadAttachment(url, {
        maxBytes: verdict.maxBytes,
        ...(typeof file.size === "number" ? { reportedSize: file.size } : {}),
        timeoutMs: this.#deps.attachmentTimeoutMs,
        fetchImpl: withToken,
      });
      if (result.ok && result.contentType?.startsWith("text/html") && !file.mimetype?.startsWith("text/html")) {
        // The sign-in page instead of the file: the token was not accepted for it.
        this.#deps.log.warn({ messageId, fileName }, "slack file download answered with a sign-in page (files:read scope?)");
        fetched.dropped.push({ fileName, reason: "unavailable" });
      } else if (result.ok) {
        const mimeType = file.mimetype ?? result.contentType;
        fetched.files.push({ kind: attachmentKind(mimeType), fileName, data: result.data, ...(mimeType ? { mimeType } : {}) });
      } else if (result.reason === "too_large") {
        fetched.dropped.push({ fileName, reason: "too_large" });
      } else {
        this.#deps.log.warn({ messageId, fileName, detail: this.#deps.redact(result.detail) }, "slack file download failed");
        fetched.dropped.push({ fileName, reason: "unavailable" });
      }
    }
    return fetched;
  }
}
