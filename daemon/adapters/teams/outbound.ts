/**
 * Replies through the Bot Connector with the Microsoft 365 Agents SDK's
 * `ConnectorClient`: to the conversation's `serviceUrl` (kept from its last
 * activity, conversation-refs.ts), with the bot's token (token.ts; none in
 * the anonymous mode). A streamed reply in a personal chat uses Teams' own
 * streaming protocol (streams.ts), opened by the turn's informative update
 * (in place of typing) and filled by the reply; elsewhere, or where the
 * conversation refuses it, the reply is edited in place (`updateActivity`)
 * and typing is a `typing` activity. A failure becomes one SendError: 429 with
 * the connector's `Retry-After`, 5xx and network failures transient, other
 * refusals permanent. No retries here: the core's one policy owns them.
 */
import { Activity } from "@microsoft/agents-activity";
import { ConnectorClient, HttpError } from "@microsoft/agents-hosting";
import type { Logger } from "pino";
import { type ButtonQuestion, type ChatTarget, type OutboundFile, SendError, type SendReceipt, type TextFormat } from "../../vocabulary/adapter.js";
import type { ConversationRefs } from "./conversation-refs.js";
import { FILE_INFO_CARD, type FileConsentValue, type FileOffers, inlineImage, upload } from "./file-consent.js";
import { type ConversationReference, conversationIdOf } from "./inbound.js";
import { streamablePart } from "../streamable.js";
import { INFORMATIVE_MAX, type OpenStream, streamInfo, type TeamsStreams } from "./streams.js";
import type { TokenSource } from "./token.js";

/** Teams takes activities up to about 28 KB; text is kept well inside that. */
export const TEAMS_LIMITS = { maxMessageLength: 10_000, typingRefreshMs: 3_000, minEditIntervalMs: 1_500 };

export interface TeamsOutboundDeps {
  refs: ConversationRefs;
  /** Absent: the anonymous mode (a local tool that takes any caller). */
  tokens: TokenSource | undefined;
  log: Logger;
  offers: FileOffers;
  /** Teams' streams open now and in earlier lives (streams.ts). */
  streams: TeamsStreams;
  /** The informative update a turn starts with in a personal chat ("" : plain typing). */
  informativeText: string;
}

export function createTeamsOutbound(deps: TeamsOutboundDeps) {
  const streams = deps.streams;
  async function client(target: ChatTarget): Promise<{ client: ConnectorClient; ref: ConversationReference }> {
    const ref = deps.refs.get(conversationIdOf(target));
    if (!ref) throw new SendError("no conversation reference for this chat (no activity came from it yet)", { permanent: true });
    const token = deps.tokens ? await deps.tokens.token() : "";
    return { client: ConnectorClient.createClientWithToken(ref.serviceUrl, token), ref };
  }

  const message = (ref: ConversationReference, text: string, format: TextFormat, extra: object = {}) =>
    Activity.fromObject({
      type: "message",
      text,
      textFormat: format === "markdown" ? "markdown" : "plain",
      from: ref.bot,
      conversation: { id: ref.conversationId },
      ...extra,
    });

  /** Where Teams' streaming protocol may be tried: a personal chat that has not refused it. */
  const streamable = (ref: ConversationReference) => ref.conversationType === "personal" && streams.usable(ref.conversationId);

  /** A refusal of the protocol by this conversation: its replies are updated in place from now on. */
  function refused(ref: ConversationReference, failure: SendError): void {
    streams.refuse(ref.conversationId);
    deps.log.info({ status: failure.status }, "teams conversation refuses streaming: its replies stream by updating the message");
  }

  /** The first `typing` of a stream; undefined when the conversation refuses the protocol (then the reply is a message). */
  async function startStream(c: ConnectorClient, ref: ConversationReference, text: string, format: TextFormat): Promise<SendReceipt | undefined> {
    // A preview's closing fence of the core's own is not streamed: the next text would not continue it (see streamablePart).
    const part = streamablePart(text);
    if (!part.trim()) return undefined;
    const first = message(ref, part, format, { type: "typing", entities: [streamInfo("streaming", 1)] });
    try {
      const sent = await c.sendToConversation(ref.conversationId, first);
      if (!sent.id) return undefined;
      await streams.opened(sent.id, ref.conversationId, part);
      return { messageId: sent.id };
    } catch (error) {
      const failure = toSendError(error);
      if (!refusal(failure)) throw failure;
      // A group chat's or channel's kind, a client without the protocol: this conversation's replies are updated in place.
      refused(ref, failure);
      return undefined;
    }
  }

  /**
   * The next text of an open stream: a `typing` with the next sequence, or on `final` (or a text that does not
   * continue what was streamed) the final `message`, which ends it. False when
   * Teams refused it (its two minutes are over, the person stopped it): the stream is forgotten and the caller
   * updates the message instead, as the Agents SDK does.
   */
  async function continueStream(
    c: ConnectorClient,
    ref: ConversationReference,
    streamId: string,
    open: OpenStream,
    text: string,
    format: TextFormat,
    final: boolean,
  ): Promise<boolean> {
    const part = streamablePart(text);
    const ending = final || open.text === null || !part.startsWith(open.text);
    const sequence = open.sequence + 1;
    const activity = ending
      ? message(ref, text, format, { id: streamId, entities: [streamInfo("final", sequence, streamId)] })
      : message(ref, part, format, { type: "typing", id: streamId, entities: [streamInfo("streaming", sequence, streamId)] });
    await streams.reserve(streamId, sequence);
    try {
      await c.sendToConversation(ref.conversationId, activity);
    } catch (error) {
      const failure = toSendError(error);
      if (!refusal(failure)) throw failure;
      await streams.ended(streamId);
      deps.log.info({ status: failure.status }, "teams stream refused mid-reply: the message is updated instead");
      return false;
    }
    if (ending) await streams.ended(streamId);
    else streams.shows(streamId, part);
    return true;
  }

  /**
   * The chat's stream opened by an informative update (nothing streamed yet) takes the reply's first text: streamed
   * on (`final` false) or ended with it. Undefined when there is none, or Teams refused it (then the reply goes as usual).
   */
  async function intoInformative(c: ConnectorClient, ref: ConversationReference, text: string, format: TextFormat, final: boolean) {
    const open = streams.inChat(ref.conversationId);
    if (open?.stream.text !== "") return undefined;
    if (!final && !streamablePart(text).trim()) return undefined;
    const taken = await continueStream(c, ref, open.id, open.stream, text, format, final);
    return taken ? { messageId: open.id } : undefined;
  }

  /** Per chat, the informative update under way (Teams allows one stream per chat). */
  const opening = new Map<string, Promise<void>>();

  async function typing(target: ChatTarget): Promise<void> {
    try {
      const { client: c, ref } = await client(target);
      if (streamable(ref) && deps.informativeText) {
        if (streams.inChat(ref.conversationId)) return;
        if (await informative(c, ref, deps.informativeText)) return;
      }
      await c.sendToConversation(ref.conversationId, Activity.fromObject({ type: "typing", from: ref.bot, conversation: { id: ref.conversationId } }));
    } catch (error) {
      deps.log.debug({ err: describe(error) }, "teams typing failed");
    }
  }

  /** Opens the chat's stream with an informative update; false when the conversation refuses the protocol. */
  async function informative(c: ConnectorClient, ref: ConversationReference, text: string): Promise<boolean> {
    const activity = message(ref, text.slice(0, INFORMATIVE_MAX), "plain", { type: "typing", entities: [streamInfo("informative", 1)] });
    try {
      const sent = await c.sendToConversation(ref.conversationId, activity);
      if (!sent.id) return false;
      await streams.opened(sent.id, ref.conversationId, "");
      return true;
    } catch (error) {
      const failure = toSendError(error);
      if (!refusal(failure)) throw failure;
      refused(ref, failure);
      return false;
    }
  }

  return {
    /** `final` false: a streamed reply's first text (Teams' own stream in a personal chat that allows it). */
    async send(target: ChatTarget, text: string, format: TextFormat, final?: boolean): Promise<SendReceipt> {
      await opening.get(target.chatId);
      const { client: c, ref } = await client(target);
      if (streamable(ref) && text.trim()) {
        const streaming = final === false;
        const taken = await intoInformative(c, ref, text, format, !streaming);
        if (taken) return taken;
        if (streaming) {
          const streamed = await startStream(c, ref, text, format);
          if (streamed) return streamed;
        }
      }
      const sent = await call(() => c.sendToConversation(ref.conversationId, message(ref, text, format)));
      return sent.id ? { messageId: sent.id } : {};
    },
    /** `final`: the message's last text (an open stream is ended with it). */
    async edit(target: ChatTarget, messageId: string, text: string, format: TextFormat, final?: boolean): Promise<void> {
      const { client: c, ref } = await client(target);
      const open = streams.get(messageId);
      // A stream an earlier life opened shows text this life does not know: a preview could not continue it, so it
      // keeps showing that until the reply's final text ends it (by its id, as the protocol wants).
      if (open?.text === null && final !== true) return;
      if (open && (await continueStream(c, ref, messageId, open, text, format, final === true))) return;
      await call(() => c.updateActivity(ref.conversationId, messageId, message(ref, text, format, { id: messageId })));
    },
    /** Whether `messageId` is a stream still open (this life's or an earlier one's): the core then ends it. */
    mayBeStream: (messageId: string): boolean => streams.get(messageId) !== undefined,
    /**
     * In a personal chat that streams, the turn's start is an informative update (`informativeText`, a progress bar
     * in Teams) opening the stream the reply then fills; while a stream is open, nothing more is needed. Elsewhere a
     * `typing` activity.
     */
    typing(target: ChatTarget): Promise<void> {
      // Kept until done: the reply's first text waits for it, so it fills this stream rather than opening a second.
      const run = (opening.get(target.chatId) ?? Promise.resolve()).then(() => typing(target));
      opening.set(target.chatId, run);
      void run.finally(() => {
        if (opening.get(target.chatId) === run) opening.delete(target.chatId);
      });
      return run;
    },
    /** An image inline; another file through the consent flow, in a personal chat only (where Teams has it). */
    async sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt> {
      const { client: c, ref } = await client(target);
      let attachment: object;
      if (file.kind === "photo" && file.mimeType.startsWith("image/")) attachment = inlineImage(file);
      else if (ref.conversationType === "personal") attachment = deps.offers.offer(target, file);
      else throw new SendError("Teams lets a bot send files only in a personal chat", { permanent: true });
      const sent = await call(() => c.sendToConversation(ref.conversationId, message(ref, "", "plain", { text: undefined, attachments: [attachment] })));
      return sent.id ? { messageId: sent.id } : {};
    },
    /** The person answered a consent card: on accept, the bytes go to their OneDrive and a file card shows it. */
    async consented(value: FileConsentValue): Promise<void> {
      const offer = deps.offers.take(value);
      if (!offer || value.action !== "accept" || !value.uploadInfo) return;
      const info = value.uploadInfo;
      await upload(info.uploadUrl, offer.file.data);
      const { client: c, ref } = await client(offer.target);
      const card = { contentType: FILE_INFO_CARD, contentUrl: info.contentUrl, name: info.name, content: { uniqueId: info.uniqueId, fileType: info.fileType } };
      await call(() => c.sendToConversation(ref.conversationId, message(ref, "", "plain", { text: undefined, attachments: [card] })));
    },
    async ask(target: ChatTarget, question: ButtonQuestion): Promise<SendReceipt> {
      const { client: c, ref } = await client(target);
      const sent = await call(() =>
        c.sendToConversation(ref.conversationId, message(ref, "", "plain", { text: undefined, attachments: [questionCard(question)] })),
      );
      return sent.id ? { messageId: sent.id } : {};
    },
    async close(target: ChatTarget, messageId: string, outcome: string): Promise<void> {
      const { client: c, ref } = await client(target);
      // The card becomes the outcome's text: its buttons go, nothing is left to tap.
      await call(() => c.updateActivity(ref.conversationId, messageId, message(ref, outcome, "plain", { id: messageId, attachments: [] })));
    },
  };
}

export type TeamsOutbound = ReturnType<typeof createTeamsOutbound>;

export const ADAPTIVE_CARD = "application/vnd.microsoft.card.adaptive";

/** The data an Action.Submit button carries back (a `message` activity's `value`): which question, which option. */
export interface ButtonTap {
  bridgeQuestion: string;
  option: number;
}

/** A question as an Adaptive Card: its text, one Action.Submit per option. */
export function questionCard(question: ButtonQuestion) {
  const actions = question.options.map((title, i) => ({
    type: "Action.Submit",
    title,
    data: { bridgeQuestion: question.id, option: i + 1 } satisfies ButtonTap,
  }));
  const note = question.allowText ? "(or answer in your own words)" : undefined;
  return { contentType: ADAPTIVE_CARD, content: cardOf(question.text, note, actions) };
}

function cardOf(text: string, note: string | undefined, actions: object[]) {
  const body: object[] = [{ type: "TextBlock", text, wrap: true }];
  if (note) body.push({ type: "TextBlock", text: note, wrap: true, isSubtle: true });
  return { type: "AdaptiveCard", $schema: "http://adaptivecards.io/schemas/adaptive-card.json", version: "1.4", body, actions };
}

/** A refusal of the request itself (4xx other than throttling): trying again the same way would not help. */
const refusal = (failure: SendError): boolean => failure.permanent && failure.status !== undefined && failure.status >= 400 && failure.status < 500;

/** One connector call; its failure as the core's SendError. */
async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toSendError(error);
  }
}

export function toSendError(error: unknown): SendError {
  if (error instanceof SendError) return error;
  if (error instanceof HttpError) {
    const status = error.status;
    const retryAfterMs = retryAfter(error.response.headers);
    const transient = status === 429 || status >= 500 || status === 408;
    return new SendError(`the Teams connector answered HTTP ${status}`, {
      permanent: !transient,
      status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }
  return new SendError(`the Teams connector did not answer (${describe(error)})`, { permanent: false });
}

/** `Retry-After` in seconds or as an HTTP date, in ms. */
function retryAfter(headers: unknown): number | undefined {
  const value = headers instanceof Headers ? headers.get("retry-after") : undefined;
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
