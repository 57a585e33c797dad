/**
 * One `/sync` and what the bot does with its answer (spec v1.11, "Syncing"): the homeserver
 * answers with everything after the `since` token and a `next_batch` token for the next call.
 * The adapter keeps `next_batch` (in its durable state) only once everything the answer
 * delivered is journaled or deliberately refused, so a restart (kill -9 included) neither loses
 * nor repeats an event: an answer not wholly taken is asked for again with the old token, and
 * what was already handed over in this life is skipped (a repeat across a restart is dropped by
 * the core's journal, which knows each event id).
 *
 * Within an answer, rooms are handed over side by side and each room in order, stopping at a
 * room's first event not taken (the rest of that room waits for the retry). Invites are joined
 * or declined by the channel's access rules. Encrypted rooms are not read: the bot says so in
 * the room once (see `ENCRYPTED_NOTICE`).
 */
import { Method, type MatrixClient } from "matrix-js-sdk";
import type { Logger } from "pino";
import { z } from "zod";
import { type AdapterStateStore, type InboundSink, SendError } from "../../vocabulary/adapter.js";
import type { AccessConfig } from "../../vocabulary/config-fields.js";
import { describe, requestOpts, type Scrub, toSendError } from "./errors.js";
import type { MatrixFilesDeps } from "./files.js";
import { handOverEvent } from "./hand-over.js";
import { type BotIdentity, type RoomEvent, roomEventSchema, shouldJoin } from "./inbound.js";
import type { MatrixOutbound } from "./outbound.js";

/** State keys: the token of the next sync, the direct rooms (from `m.direct`), encrypted rooms told we cannot read them. */
export const SINCE_KEY = "since";
const DIRECT_KEY = "directRooms";
const M_DIRECT_KEY = "mDirect";
const NOTICED_KEY = "encryptedNoticed";

/** What the bot says, once, in a room whose messages are end-to-end encrypted. */
export const ENCRYPTED_NOTICE =
  "I cannot read this room: its messages are end-to-end encrypted, and this bridge does not support Matrix encryption yet, so nothing written here reaches me. Please talk to me in a room without encryption (encryption is chosen when a room is created and cannot be turned off later).";

const eventList = z.looseObject({ events: z.array(z.unknown()).catch([]) }).optional();
const syncSchema = z.looseObject({
  next_batch: z.string(),
  rooms: z
    .looseObject({
      join: z
        .record(z.string(), z.looseObject({ timeline: eventList, state: eventList }))
        .catch({})
        .optional(),
      invite: z
        .record(z.string(), z.looseObject({ invite_state: eventList }))
        .catch({})
        .optional(),
    })
    .optional(),
  account_data: eventList,
});
export type SyncAnswer = z.output<typeof syncSchema>;

const directContent = z.record(z.string(), z.array(z.string()).catch([]));
const stringList = z.array(z.string());

/** Events of a list that parse as room events (a malformed one is skipped, not fatal). */
const eventsOf = (list: { events: unknown[] } | undefined): RoomEvent[] =>
  (list?.events ?? []).flatMap((e) => {
    const parsed = roomEventSchema.safeParse(e);
    return parsed.success ? [parsed.data] : [];
  });

export interface SyncerDeps {
  client: MatrixClient;
  state: AdapterStateStore;
  log: Logger;
  scrub: Scrub;
  accountId: string;
  access: AccessConfig;
  outbound: MatrixOutbound;
  files: Omit<MatrixFilesDeps, "log" | "scrub">;
  /** The long poll's `timeout`, ms. */
  pollTimeoutMs: number;
}

/** How long the adapter remembers ids it handed over (a server may repeat an event). */
const RECENT_IDS = 5000;

export class Syncer {
  readonly #deps: SyncerDeps;
  readonly #recent = new Set<string>();
  #direct: Set<string>;
  #noticed: Set<string>;

  constructor(deps: SyncerDeps) {
    this.#deps = deps;
    this.#direct = new Set(this.#list(DIRECT_KEY));
    this.#noticed = new Set(this.#list(NOTICED_KEY));
  }

  #list(key: string): string[] {
    const parsed = stringList.safeParse(this.#deps.state.get<unknown>(key));
    return parsed.success ? parsed.data : [];
  }

  /** The token the last run kept, if any. */
  get since(): string | undefined {
    const since = this.#deps.state.get<unknown>(SINCE_KEY);
    return typeof since === "string" ? since : undefined;
  }

  /** One long poll; throws when it fails (or is aborted by stop). The first ever skips room history (limit 0). */
  async fetch(signal: AbortSignal): Promise<SyncAnswer> {
    const since = this.since;
    // Members' state only for senders seen (lazy loading), no presence: a bot needs neither.
    const room = { state: { lazy_load_members: true }, ...(since === undefined ? { timeline: { limit: 0 } } : {}) };
    const filter = { room, presence: { not_types: ["*"] } };
    const params: Record<string, string> = { timeout: String(since === undefined ? 0 : this.#deps.pollTimeoutMs), filter: JSON.stringify(filter) };
    if (since !== undefined) params.since = since;
    const raw = await this.#deps.client.http.authedRequest<unknown>(
      Method.Get,
      "/sync",
      params,
      undefined,
      requestOpts({ abortSignal: signal, localTimeoutMs: this.#deps.pollTimeoutMs + 30_000 }),
    );
    return syncSchema.parse(raw);
  }

  /** Hands the answer over; keeps `next_batch` when all of it was taken. Returns whether it was (else ask again). */
  async handle(answer: SyncAnswer, bot: BotIdentity, sink: InboundSink, signal: AbortSignal): Promise<boolean> {
    await this.#accountData(answer);
    const joined = Object.entries(answer.rooms?.join ?? {});
    const invites = await Promise.all(
      Object.entries(answer.rooms?.invite ?? {}).map(([roomId, room]) => this.#invite(roomId, eventsOf(room.invite_state), bot, signal)),
    );
    const rooms = await Promise.all(joined.map(([roomId, room]) => this.#room(roomId, eventsOf(room.timeline), bot, sink, signal)));
    const complete = [...invites, ...rooms].every(Boolean);
    // Kept past the token too: a server may deliver an event again in a later answer.
    if (complete) await this.#deps.state.set(SINCE_KEY, answer.next_batch);
    return complete;
  }

  /** The bot's `m.direct` (which rooms are direct chats), kept: a later sync sends it only when it changes. */
  async #accountData(answer: SyncAnswer): Promise<void> {
    for (const event of answer.account_data?.events ?? []) {
      const parsed = z.looseObject({ type: z.literal("m.direct"), content: directContent }).safeParse(event);
      if (!parsed.success) continue;
      this.#direct = new Set(Object.values(parsed.data.content).flat());
      await this.#deps.state.set(M_DIRECT_KEY, parsed.data.content);
      await this.#deps.state.set(DIRECT_KEY, [...this.#direct]);
    }
  }

  /** Joins or declines an invite by the access rules; false when that failed and must be tried again. */
  async #invite(roomId: string, events: RoomEvent[], bot: BotIdentity, signal: AbortSignal): Promise<boolean> {
    const { client, log, scrub, access } = this.#deps;
    const key = `invite\u0000${roomId}`;
    if (this.#recent.has(key)) return true;
    const member = events.find((e) => e.type === "m.room.member" && e.state_key === bot.userId && e.content.membership === "invite");
    const inviter = member?.sender ?? "";
    const direct = member?.content.is_direct === true;
    const encrypted = events.some((e) => e.type === "m.room.encryption");
    try {
      if (shouldJoin(access, { roomId, inviter, direct })) {
        await client.http.authedRequest(Method.Post, `/join/${encodeURIComponent(roomId)}`, undefined, {}, requestOpts({ abortSignal: signal }));
        log.info({ roomId, inviter, direct }, "matrix invite joined");
        if (direct) await this.#markDirect(roomId, inviter);
        if (encrypted) await this.#noticeEncrypted(roomId);
      } else {
        await client.http.authedRequest(Method.Post, `/rooms/${encodeURIComponent(roomId)}/leave`, undefined, {}, requestOpts({ abortSignal: signal }));
        // At info with the ids, so the operator can add the inviter or the room to the access rules.
        log.info({ roomId, inviter, direct }, "matrix invite declined by the access rules");
      }
      this.#remember(key);
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      // Refused for good (the invite was withdrawn, the room is gone): nothing to retry.
      const permanent = toSendError("invite", error, scrub).permanent;
      log.warn({ roomId, err: describe(error, scrub) }, permanent ? "matrix invite could not be handled; dropped" : "matrix invite not handled; will retry");
      if (permanent) this.#remember(key);
      return permanent;
    }
  }

  /** A direct chat the bot joined: listed in its `m.direct`, as clients do for a direct invite they accept. */
  async #markDirect(roomId: string, inviter: string): Promise<void> {
    this.#direct.add(roomId);
    await this.#deps.state.set(DIRECT_KEY, [...this.#direct]);
    const parsed = directContent.safeParse(this.#deps.state.get<unknown>(M_DIRECT_KEY));
    const content = parsed.success ? parsed.data : {};
    content[inviter] = [...new Set([...(content[inviter] ?? []), roomId])];
    await this.#deps.state.set(M_DIRECT_KEY, content);
    await this.#deps.client.http
      .authedRequest(Method.Put, `/user/${encodeURIComponent(this.#deps.client.getUserId() ?? "")}/account_data/m.direct`, undefined, content)
      .catch((error: unknown) => this.#deps.log.warn({ err: describe(error, this.#deps.scrub) }, "matrix m.direct not updated (the room stays direct here)"));
  }

  /** The room's events in order; false at the first one not taken (the rest waits for the retry). */
  async #room(roomId: string, timeline: RoomEvent[], bot: BotIdentity, sink: InboundSink, signal: AbortSignal): Promise<boolean> {
    const { log, scrub, accountId } = this.#deps;
    for (const event of timeline) {
      if (this.#recent.has(event.event_id)) continue;
      try {
        if (event.type === "m.room.encrypted" && event.sender !== bot.userId) {
          log.warn({ roomId, eventId: event.event_id }, "matrix encrypted message not readable (encryption is not supported)");
          await this.#noticeEncrypted(roomId);
        } else {
          await handOverEvent(event, { roomId, direct: this.#direct.has(roomId) }, { bot, sink, accountId, signal }, { ...this.#deps.files, log, scrub });
        }
        this.#remember(event.event_id);
      } catch (error) {
        if (!signal.aborted) log.warn({ roomId, eventId: event.event_id, err: describe(error, scrub) }, "matrix event not accepted; will retry");
        return false;
      }
    }
    return true;
  }

  /** Says once per room that its encrypted messages cannot be read (kept, so a restart does not say it again). */
  async #noticeEncrypted(roomId: string): Promise<void> {
    if (this.#noticed.has(roomId)) return;
    try {
      await this.#deps.outbound.notice(roomId, ENCRYPTED_NOTICE);
    } catch (error) {
      // Not allowed to speak there (a read-only room): said nowhere, not retried forever.
      if (!(error instanceof SendError && error.permanent)) throw error;
      this.#deps.log.warn({ roomId, err: error.message }, "matrix encrypted-room notice refused");
    }
    this.#noticed.add(roomId);
    await this.#deps.state.set(NOTICED_KEY, [...this.#noticed]);
  }

  #remember(id: string): void {
    this.#recent.add(id);
    if (this.#recent.size > RECENT_IDS) {
      const oldest = this.#recent.values().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
  }
}
