/**
 * A local stand-in for a Matrix homeserver, over real HTTP, following the client-server API's
 * documents (spec v1.11: https://spec.matrix.org/v1.11/client-server-api/) for what a bot and a
 * person's client use: `/sync` (a stream position as `next_batch`; a `since` returns only what
 * came after it; a long poll wakes on a new event; `rooms.join` timeline and state,
 * `rooms.invite` with `invite_state`, global `account_data`; a filter's `room.timeline.limit`
 * marks a cut timeline `limited`), `PUT /rooms/{roomId}/send/{eventType}/{txnId}` (idempotent per
 * access token and transaction id; only a joined member may send; an event over 65,536 bytes is
 * `M_TOO_LARGE`), `redact`, `typing` (only for the token's own user), `join`/`leave` (joining
 * needs an invite), `account_data`, profiles, `account/whoami`, the relations endpoint
 * (`/_matrix/client/v1/rooms/{roomId}/relations/{eventId}/{relType}/{eventType}`), and media:
 * `POST /_matrix/media/v3/upload` and the authenticated download
 * `GET /_matrix/client/v1/media/download/{serverName}/{mediaId}` (since v1.11 the unauthenticated
 * `/_matrix/media/v3/download` is frozen: 404 `M_NOT_FOUND` for new media).
 *
 * Errors are the spec's JSON `{errcode, error}`: a missing token is 401 `M_MISSING_TOKEN`, an
 * unknown one 401 `M_UNKNOWN_TOKEN`; a rate limit is 429 `M_LIMIT_EXCEEDED` with `retry_after_ms`
 * and a `Retry-After` header in whole seconds (v1.10). Tests inject rate limits, dropped
 * connections and repeated deliveries.
 *
 * What a chat shows (`shown`) applies the spec's rules for edits as a client does: an
 * `m.replace` counts only from the original's own sender, in the same room, on an original that
 * is not itself an edit; the newest one's `m.new_content` is shown.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface MatrixEvent {
  event_id: string;
  room_id: string;
  type: string;
  sender: string;
  content: Record<string, unknown>;
  origin_server_ts: number;
  state_key?: string;
  unsigned?: Record<string, unknown>;
}

interface Stored {
  pos: number;
  event: MatrixEvent;
  redacted: boolean;
}

interface User {
  userId: string;
  token: string;
  displayName: string;
  deviceId: string;
  /** Global account data by type, with the stream position it changed at. */
  accountData: Map<string, { pos: number; content: unknown }>;
}

interface Media {
  data: Buffer;
  contentType: string;
  fileName: string | undefined;
}

export interface RoomOptions {
  name?: string;
  /** Joined at once (the creator always is). */
  join?: string[];
  /** Invited (with `is_direct` when `direct`). */
  invite?: string[];
  /** A direct chat (`is_direct` on the invites; the creator's `m.direct` lists it). */
  direct?: boolean;
  /** `m.room.encryption` state (megolm). */
  encrypted?: boolean;
}

export interface FakeMatrix {
  url: string;
  serverName: string;
  /** A user of this server with an access token; returns the token. */
  register(localpart: string, displayName?: string): { userId: string; token: string; deviceId: string };
  createRoom(creator: string, options?: RoomOptions): string;
  invite(roomId: string, inviter: string, userId: string, options?: { direct?: boolean }): void;
  /** Adds an event as `sender` (a person's client would send it): the same path as `PUT send`. */
  inject(roomId: string, sender: string, type: string, content: Record<string, unknown>): MatrixEvent;
  /** The room's events in order (redacted ones included, marked by an empty content). */
  events(roomId: string): MatrixEvent[];
  /** The room's `m.room.message`s by `sender` as a client shows them (edits applied, redactions gone), oldest first. */
  shown(roomId: string, sender: string): { event: MatrixEvent; body: string; html: string | undefined }[];
  /** Reactions (`m.annotation` keys) by `sender` on event `eventId`, not redacted. */
  reactions(roomId: string, eventId: string, sender: string): string[];
  /** Who is joined to the room. */
  members(roomId: string): string[];
  /** Typing notifications received, in order. */
  typing: { roomId: string; userId: string; typing: boolean }[];
  /** Every request, method and path (no query), when (epoch ms), and whether a rate limit answered it, in order. */
  requests: { method: string; path: string; user: string | undefined; at: number; limited?: true }[];
  /** Uploaded media by mxc URI. */
  media(mxc: string): Media | undefined;
  /** The next `count` requests whose path contains `pathPart` answer 429 `M_LIMIT_EXCEEDED`. */
  rateLimit(pathPart: string, count: number, retryAfterMs: number): void;
  /** The next `/sync` answered to `userId` is cut off: its connection is destroyed, no answer. */
  dropNextSync(userId: string): void;
  /** The stream position now (what a `next_batch` of `s<position>` names). */
  position(): number;
  /** Holds every authenticated media download until `release` (a test kills the bot meanwhile); `arrived` counts the held ones. */
  holdDownloads(): { arrived(): number; release(): void };
  /** Event `eventId` comes again in the next `/sync` answer to `userId` (a server may repeat: clients must drop duplicates). */
  repeat(userId: string, eventId: string): void;
  close(): Promise<void>;
}

const MAX_EVENT_BYTES = 65_536;
const SPEC_VERSIONS = ["r0.5.0", "r0.6.0", "r0.6.1", ...Array.from({ length: 11 }, (_, i) => `v1.${i + 1}`)];
const MAX_UPLOAD_BYTES = 50 * 1024 * 1024;

class MatrixHttpError extends Error {
  constructor(
    readonly status: number,
    readonly errcode: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export async function createFakeMatrix(options: { serverName?: string } = {}): Promise<FakeMatrix> {
  const serverName = options.serverName ?? "fake.test";
  const users = new Map<string, User>();
  const byToken = new Map<string, User>();
  const log: Stored[] = [];
  const byId = new Map<string, Stored>();
  /** Membership per room and user, as the latest member event says. */
  const membership = new Map<string, Map<string, string>>();
  const txns = new Map<string, string>();
  const mediaStore = new Map<string, Media>();
  const limits: { pathPart: string; count: number; retryAfterMs: number }[] = [];
  const drops = new Set<string>();
  let held: { count: number; gate: Promise<void>; open(): void } | undefined;
  const repeats = new Map<string, string[]>();
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  const typing: FakeMatrix["typing"] = [];
  /** End-to-end keys (spec: "End-to-end encryption"): device keys, one-time and fallback keys, to-device messages. */
  const deviceKeys = new Map<string, Map<string, unknown>>();
  const oneTimeKeys = new Map<string, Map<string, unknown>>();
  const fallbackKeys = new Map<string, Map<string, unknown>>();
  const toDevice: { pos: number; userId: string; deviceId: string; event: { type: string; sender: string; content: unknown } }[] = [];
  const keyChanges: { pos: number; userId: string }[] = [];
  const filters = new Map<string, unknown>();
  const requests: FakeMatrix["requests"] = [];
  let pos = 0;
  let counter = 0;

  const newId = (sigil: string) => `${sigil}${(++counter).toString(36)}${randomBytes(6).toString("hex")}`;

  function append(roomId: string, sender: string, type: string, content: Record<string, unknown>, stateKey?: string): MatrixEvent {
    const event: MatrixEvent = {
      event_id: newId("$"),
      room_id: roomId,
      type,
      sender,
      content,
      origin_server_ts: Date.now(),
      ...(stateKey !== undefined ? { state_key: stateKey } : {}),
    };
    const stored = { pos: ++pos, event, redacted: false };
    log.push(stored);
    byId.set(event.event_id, stored);
    if (type === "m.room.member" && stateKey !== undefined) {
      const members = membership.get(roomId) ?? new Map<string, string>();
      members.set(stateKey, String(content.membership));
      membership.set(roomId, members);
    }
    wake();
    return event;
  }

  function wake() {
    for (const w of [...waiters]) w();
  }

  const memberOf = (roomId: string, userId: string) => membership.get(roomId)?.get(userId);

  function setAccountData(user: User, type: string, content: unknown) {
    user.accountData.set(type, { pos: ++pos, content });
    wake();
  }

  function register(localpart: string, displayName?: string) {
    const userId = `@${localpart}:${serverName}`;
    const token = `syt_${Buffer.from(localpart).toString("base64url")}_${randomBytes(12).toString("hex")}`;
    const user: User = {
      userId,
      token,
      displayName: displayName ?? localpart,
      deviceId: `DEV${randomBytes(4).toString("hex").toUpperCase()}`,
      accountData: new Map(),
    };
    users.set(userId, user);
    byToken.set(token, user);
    return { userId, token, deviceId: user.deviceId };
  }

  function invite(roomId: string, inviter: string, userId: string, opts: { direct?: boolean } = {}) {
    append(
      roomId,
      inviter,
      "m.room.member",
      { membership: "invite", ...(opts.direct ? { is_direct: true } : {}), displayname: users.get(userId)?.displayName },
      userId,
    );
  }

  function createRoom(creator: string, opts: RoomOptions = {}): string {
    const roomId = newId("!").concat(`:${serverName}`);
    append(roomId, creator, "m.room.create", { room_version: "10", creator }, "");
    append(roomId, creator, "m.room.member", { membership: "join", displayname: users.get(creator)?.displayName }, creator);
    append(roomId, creator, "m.room.join_rules", { join_rule: "invite" }, "");
    if (opts.name) append(roomId, creator, "m.room.name", { name: opts.name }, "");
    if (opts.encrypted) append(roomId, creator, "m.room.encryption", { algorithm: "m.megolm.v1.aes-sha2" }, "");
    for (const other of opts.join ?? []) append(roomId, other, "m.room.member", { membership: "join", displayname: users.get(other)?.displayName }, other);
    for (const other of opts.invite ?? []) invite(roomId, creator, other, { direct: opts.direct ?? false });
    const owner = users.get(creator);
    if (opts.direct && owner) {
      const direct = { ...((owner.accountData.get("m.direct")?.content as Record<string, string[]>) ?? {}) };
      for (const other of opts.invite ?? []) direct[other] = [...(direct[other] ?? []), roomId];
      setAccountData(owner, "m.direct", direct);
    }
    return roomId;
  }

  /** The room's state just before position `at` (the latest of each type and state key). */
  function stateBefore(roomId: string, at: number): MatrixEvent[] {
    const state = new Map<string, MatrixEvent>();
    for (const s of log) {
      if (s.pos >= at) break;
      if (s.event.room_id === roomId && s.event.state_key !== undefined) state.set(`${s.event.type}\u0000${s.event.state_key}`, s.event);
    }
    return [...state.values()];
  }

  const clientEvent = (s: Stored): MatrixEvent => (s.redacted ? { ...s.event, content: {}, unsigned: { redacted_because: {} } } : s.event);

  function syncFor(user: User, since: number, timelineLimit: number | undefined) {
    const join: Record<string, { timeline: { events: MatrixEvent[]; limited: boolean; prev_batch: string }; state: { events: MatrixEvent[] } }> = {};
    const inviteRooms: Record<string, { invite_state: { events: MatrixEvent[] } }> = {};
    const repeated = repeats.get(user.userId) ?? [];
    repeats.delete(user.userId);
    const roomsSeen = new Set<string>();
    for (const s of log) if (s.pos > since) roomsSeen.add(s.event.room_id);
    for (const id of repeated) {
      const s = byId.get(id);
      if (s) roomsSeen.add(s.event.room_id);
    }
    for (const roomId of roomsSeen) {
      const mine = memberOf(roomId, user.userId);
      if (mine === "invite") {
        inviteRooms[roomId] = {
          invite_state: {
            events: stateBefore(roomId, pos + 1).filter((e) =>
              ["m.room.create", "m.room.name", "m.room.encryption", "m.room.member", "m.room.join_rules"].includes(e.type),
            ),
          },
        };
        continue;
      }
      // Events from the user's latest join on (a user sees a room's timeline from when they joined).
      const joinedAt = [...log]
        .reverse()
        .find(
          (s) => s.event.room_id === roomId && s.event.type === "m.room.member" && s.event.state_key === user.userId && s.event.content.membership === "join",
        )?.pos;
      if (mine !== "join" || joinedAt === undefined) continue;
      let timeline = log.filter((s) => s.event.room_id === roomId && s.pos > since && s.pos >= joinedAt);
      for (const id of repeated) {
        const s = byId.get(id);
        if (s && s.event.room_id === roomId) timeline = [s, ...timeline];
      }
      if (timeline.length === 0) continue;
      const limited = timelineLimit !== undefined && timeline.length > timelineLimit;
      if (limited) timeline = timeline.slice(timeline.length - (timelineLimit ?? 0));
      // A room newly joined in this range (or cut short) brings its state before the timeline.
      const first = timeline[0]?.pos ?? pos + 1;
      const state = joinedAt > since || limited ? stateBefore(roomId, first) : [];
      join[roomId] = { timeline: { events: timeline.map(clientEvent), limited, prev_batch: `t${first}` }, state: { events: state } };
    }
    const accountData = [...user.accountData.entries()].filter(([, v]) => v.pos > since).map(([type, v]) => ({ type, content: v.content }));
    const toMe = toDevice.filter((t) => t.pos > since && t.userId === user.userId && t.deviceId === user.deviceId).map((t) => t.event);
    const changed = since > 0 ? [...new Set(keyChanges.filter((k) => k.pos > since).map((k) => k.userId))] : [];
    const empty =
      Object.keys(join).length === 0 && Object.keys(inviteRooms).length === 0 && accountData.length === 0 && toMe.length === 0 && changed.length === 0;
    return {
      empty,
      body: {
        next_batch: `s${pos}`,
        rooms: { join, invite: inviteRooms, leave: {} },
        account_data: { events: accountData },
        to_device: { events: toMe },
        device_lists: { changed, left: [] },
        device_one_time_keys_count: { signed_curve25519: oneTimeKeys.get(`${user.userId}|${user.deviceId}`)?.size ?? 0 },
      },
    };
  }

  async function sync(user: User, url: URL, req: IncomingMessage, res: ServerResponse) {
    const sinceParam = url.searchParams.get("since");
    let since = 0;
    if (sinceParam !== null) {
      const m = /^s(\d+)$/.exec(sinceParam);
      if (!m) throw new MatrixHttpError(400, "M_INVALID_PARAM", "unknown since token");
      since = Number(m[1]);
    }
    const timeout = Math.min(Number(url.searchParams.get("timeout") ?? 0) || 0, 60_000);
    let timelineLimit: number | undefined;
    const filter = url.searchParams.get("filter");
    if (filter?.startsWith("{")) {
      const parsed = JSON.parse(filter) as { room?: { timeline?: { limit?: number } } };
      timelineLimit = parsed.room?.timeline?.limit;
    }
    let answer = syncFor(user, since, timelineLimit);
    if (answer.empty && timeout > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          req.off("close", done);
          resolve();
        };
        const timer = setTimeout(done, timeout);
        waiters.add(done);
        req.on("close", done);
      });
      answer = syncFor(user, since, timelineLimit);
    }
    if (drops.delete(user.userId)) {
      req.socket.destroy();
      return;
    }
    json(res, 200, answer.body);
  }

  function send(user: User, roomId: string, type: string, txnId: string, content: Record<string, unknown>, stateKey?: string): string {
    const key = `${user.token}\u0000${roomId}\u0000${txnId}`;
    const known = txns.get(key);
    if (known) return known;
    if (memberOf(roomId, user.userId) !== "join") throw new MatrixHttpError(403, "M_FORBIDDEN", `User ${user.userId} not in room ${roomId}`);
    if (Buffer.byteLength(JSON.stringify(content)) > MAX_EVENT_BYTES) throw new MatrixHttpError(413, "M_TOO_LARGE", "event too large");
    if (type === "m.room.message" && (typeof content.body !== "string" || typeof content.msgtype !== "string")) {
      throw new MatrixHttpError(400, "M_BAD_JSON", "m.room.message needs body and msgtype");
    }
    const event = append(roomId, user.userId, type, content, stateKey);
    txns.set(key, event.event_id);
    return event.event_id;
  }

  function uploadKeys(user: User, body: Record<string, unknown>) {
    const device = `${user.userId}|${user.deviceId}`;
    if (body.device_keys) {
      const mine = deviceKeys.get(user.userId) ?? new Map<string, unknown>();
      mine.set(user.deviceId, body.device_keys);
      deviceKeys.set(user.userId, mine);
      keyChanges.push({ pos: ++pos, userId: user.userId });
    }
    const otks = oneTimeKeys.get(device) ?? new Map<string, unknown>();
    for (const [id, key] of Object.entries((body.one_time_keys ?? {}) as Record<string, unknown>)) otks.set(id, key);
    oneTimeKeys.set(device, otks);
    const fallbacks = (body.fallback_keys ?? body["org.matrix.msc2732.fallback_keys"]) as Record<string, unknown> | undefined;
    if (fallbacks) fallbackKeys.set(device, new Map(Object.entries(fallbacks)));
    return { one_time_key_counts: { signed_curve25519: otks.size } };
  }

  function queryKeys(body: Record<string, unknown>) {
    const wanted = (body.device_keys ?? {}) as Record<string, string[]>;
    const device_keys: Record<string, Record<string, unknown>> = {};
    for (const [userId, devices] of Object.entries(wanted)) {
      const known = deviceKeys.get(userId) ?? new Map<string, unknown>();
      device_keys[userId] = Object.fromEntries([...known.entries()].filter(([id]) => devices.length === 0 || devices.includes(id)));
    }
    return { device_keys, failures: {}, master_keys: {}, self_signing_keys: {}, user_signing_keys: {} };
  }

  /** One one-time key per device asked for, used up; the fallback key when none is left. */
  function claimKeys(body: Record<string, unknown>) {
    const wanted = (body.one_time_keys ?? {}) as Record<string, Record<string, string>>;
    const one_time_keys: Record<string, Record<string, Record<string, unknown>>> = {};
    for (const [userId, devices] of Object.entries(wanted)) {
      for (const [deviceId, algorithm] of Object.entries(devices)) {
        const device = `${userId}|${deviceId}`;
        const otks = oneTimeKeys.get(device);
        const id = [...(otks?.keys() ?? [])].find((k) => k.startsWith(`${algorithm}:`));
        const fallback = [...(fallbackKeys.get(device)?.entries() ?? [])].find(([k]) => k.startsWith(`${algorithm}:`));
        const claimed = id !== undefined ? ([id, otks?.get(id)] as const) : fallback;
        if (id !== undefined) otks?.delete(id);
        if (!claimed) continue;
        one_time_keys[userId] = { ...(one_time_keys[userId] ?? {}), [deviceId]: { [claimed[0]]: claimed[1] } };
      }
    }
    return { one_time_keys, failures: {} };
  }

  async function route(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://fake");
    const path = url.pathname;
    const method = req.method ?? "GET";
    try {
      // Every version it speaks, as Synapse lists them (clients test for the one a feature came in: threads v1.4).
      if (path === "/_matrix/client/versions") return json(res, 200, { versions: SPEC_VERSIONS, unstable_features: {} });
      const auth = req.headers.authorization;
      const token = auth?.startsWith("Bearer ") ? auth.slice(7) : url.searchParams.get("access_token");
      const user = token ? byToken.get(token) : undefined;
      const record: FakeMatrix["requests"][number] = { method, path, user: user?.userId, at: Date.now() };
      requests.push(record);
      if (!token) throw new MatrixHttpError(401, "M_MISSING_TOKEN", "Missing access token");
      if (!user) throw new MatrixHttpError(401, "M_UNKNOWN_TOKEN", "Unrecognised access token", { soft_logout: false });
      const limit = limits.find((l) => l.count > 0 && path.includes(l.pathPart));
      if (limit) {
        limit.count--;
        record.limited = true;
        res.setHeader("retry-after", String(Math.ceil(limit.retryAfterMs / 1000)));
        throw new MatrixHttpError(429, "M_LIMIT_EXCEEDED", "Too many requests", { retry_after_ms: limit.retryAfterMs });
      }
      const body = method === "GET" ? Buffer.alloc(0) : await readBody(req);
      const p = (re: RegExp) =>
        re
          .exec(path)
          ?.slice(1)
          .map((part) => (part === undefined ? undefined : decodeURIComponent(part)));
      let m: (string | undefined)[] | undefined;
      if (method === "GET" && path === "/_matrix/client/v3/account/whoami")
        return json(res, 200, { user_id: user.userId, device_id: user.deviceId, is_guest: false });
      if (method === "GET" && path === "/_matrix/client/v3/sync") return await sync(user, url, req, res);
      if (method === "GET" && path === "/_matrix/client/v3/pushrules/")
        return json(res, 200, { global: { override: [], content: [], room: [], sender: [], underride: [] } });
      if (method === "GET" && path === "/_matrix/client/v3/capabilities") return json(res, 200, { capabilities: {} });
      // No key backup on this server (spec: 404 M_NOT_FOUND).
      if (method === "GET" && path === "/_matrix/client/v3/room_keys/version") throw new MatrixHttpError(404, "M_NOT_FOUND", "No current backup version");
      if (method === "POST" && path === "/_matrix/client/v3/keys/upload") return json(res, 200, uploadKeys(user, parseJson(body)));
      if (method === "POST" && path === "/_matrix/client/v3/keys/query") return json(res, 200, queryKeys(parseJson(body)));
      if (method === "POST" && path === "/_matrix/client/v3/keys/claim") return json(res, 200, claimKeys(parseJson(body)));
      m = method === "GET" ? p(/^\/_matrix\/client\/v3\/profile\/([^/]+)(?:\/(displayname))?$/) : undefined;
      if (m) {
        const who = users.get(m[0] ?? "");
        if (!who) throw new MatrixHttpError(404, "M_NOT_FOUND", "Profile not found");
        return json(res, 200, { displayname: who.displayName });
      }
      m = method === "PUT" ? p(/^\/_matrix\/client\/v3\/sendToDevice\/([^/]+)\/([^/]+)$/) : undefined;
      if (m) {
        const [type = "", txnId = ""] = m;
        const key = `${user.token}\u0000toDevice\u0000${txnId}`;
        if (!txns.has(key)) {
          txns.set(key, "sent");
          const messages = (parseJson(body).messages ?? {}) as Record<string, Record<string, unknown>>;
          for (const [userId, devices] of Object.entries(messages)) {
            for (const [deviceId, content] of Object.entries(devices)) {
              const targets = deviceId === "*" ? [...(deviceKeys.get(userId)?.keys() ?? [])] : [deviceId];
              for (const target of targets) toDevice.push({ pos: ++pos, userId, deviceId: target, event: { type, sender: user.userId, content } });
            }
          }
          wake();
        }
        return json(res, 200, {});
      }
      m = method === "POST" ? p(/^\/_matrix\/client\/v3\/user\/([^/]+)\/filter$/) : undefined;
      if (m) {
        const id = String(filters.size + 1);
        filters.set(id, parseJson(body));
        return json(res, 200, { filter_id: id });
      }
      m = method === "GET" ? p(/^\/_matrix\/client\/v3\/user\/([^/]+)\/filter\/([^/]+)$/) : undefined;
      if (m) {
        const filter = filters.get(m[1] ?? "");
        if (!filter) throw new MatrixHttpError(404, "M_NOT_FOUND", "No such filter");
        return json(res, 200, filter);
      }
      m = method === "GET" ? p(/^\/_matrix\/client\/v3\/rooms\/([^/]+)\/members$/) : undefined;
      if (m) {
        const roomId = m[0] ?? "";
        if (memberOf(roomId, user.userId) !== "join") throw new MatrixHttpError(403, "M_FORBIDDEN", "Not in room");
        return json(res, 200, { chunk: stateBefore(roomId, pos + 1).filter((e) => e.type === "m.room.member") });
      }
      m = method === "PUT" ? p(/^\/_matrix\/client\/v3\/rooms\/([^/]+)\/send\/([^/]+)\/([^/]+)$/) : undefined;
      if (m) {
        const [roomId = "", type = "", txnId = ""] = m;
        return json(res, 200, { event_id: send(user, roomId, type, txnId, parseJson(body)) });
      }
      m = method === "PUT" ? p(/^\/_matrix\/client\/v3\/rooms\/([^/]+)\/redact\/([^/]+)\/([^/]+)$/) : undefined;
      if (m) {
        const [roomId = "", eventId = "", txnId = ""] = m;
        const target = byId.get(eventId);
        if (!target || target.event.room_id !== roomId) throw new MatrixHttpError(404, "M_NOT_FOUND", "Event not found");
        if (target.event.sender !== user.userId) throw new MatrixHttpError(403, "M_FORBIDDEN", "Only your own events (no power level here)");
        const redaction = send(user, roomId, "m.room.redaction", txnId, { redacts: eventId, ...parseJson(body) });
        target.redacted = true;
        return json(res, 200, { event_id: redaction });
      }
      m = method === "PUT" ? p(/^\/_matrix\/client\/v3\/rooms\/([^/]+)\/typing\/([^/]+)$/) : undefined;
      if (m) {
        const [roomId = "", userId = ""] = m;
        if (userId !== user.userId) throw new MatrixHttpError(403, "M_FORBIDDEN", "Cannot set another user's typing state");
        if (memberOf(roomId, user.userId) !== "join") throw new MatrixHttpError(403, "M_FORBIDDEN", "Not in room");
        typing.push({ roomId, userId, typing: parseJson(body).typing === true });
        return json(res, 200, {});
      }
      m = method === "POST" ? p(/^\/_matrix\/client\/v3\/(?:rooms\/([^/]+)\/join|join\/([^/]+))$/) : undefined;
      if (m) {
        const roomId = m[0] ?? m[1] ?? "";
        const now = memberOf(roomId, user.userId);
        if (now !== "invite" && now !== "join") throw new MatrixHttpError(403, "M_FORBIDDEN", "You are not invited to this room.");
        if (now !== "join") append(roomId, user.userId, "m.room.member", { membership: "join", displayname: user.displayName }, user.userId);
        return json(res, 200, { room_id: roomId });
      }
      m = method === "POST" ? p(/^\/_matrix\/client\/v3\/rooms\/([^/]+)\/leave$/) : undefined;
      if (m) {
        const roomId = m[0] ?? "";
        if (!memberOf(roomId, user.userId)) throw new MatrixHttpError(403, "M_FORBIDDEN", "Not in room");
        append(roomId, user.userId, "m.room.member", { membership: "leave" }, user.userId);
        return json(res, 200, {});
      }
      m = p(/^\/_matrix\/client\/v3\/user\/([^/]+)\/account_data\/([^/]+)$/);
      if (m) {
        const [userId = "", type = ""] = m;
        if (userId !== user.userId) throw new MatrixHttpError(403, "M_FORBIDDEN", "Cannot access another user's account data");
        if (method === "PUT") {
          setAccountData(user, type, parseJson(body));
          return json(res, 200, {});
        }
        const data = user.accountData.get(type);
        if (!data) throw new MatrixHttpError(404, "M_NOT_FOUND", "Account data not found");
        return json(res, 200, data.content);
      }
      m = method === "GET" ? p(/^\/_matrix\/client\/v1\/rooms\/([^/]+)\/relations\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/) : undefined;
      if (m) {
        const [roomId = "", eventId = "", relType, eventType] = m;
        if (memberOf(roomId, user.userId) !== "join") throw new MatrixHttpError(403, "M_FORBIDDEN", "Not in room");
        const chunk = log
          .filter((s) => !s.redacted && s.event.room_id === roomId)
          .filter((s) => {
            const rel = s.event.content["m.relates_to"] as { rel_type?: string; event_id?: string } | undefined;
            return rel?.event_id === eventId && (!relType || rel.rel_type === relType) && (!eventType || s.event.type === eventType);
          })
          .reverse()
          .map(clientEvent);
        return json(res, 200, { chunk });
      }
      if (method === "POST" && path === "/_matrix/media/v3/upload") {
        if (body.length > MAX_UPLOAD_BYTES) throw new MatrixHttpError(413, "M_TOO_LARGE", "Upload too large");
        const id = randomBytes(12).toString("hex");
        const mxc = `mxc://${serverName}/${id}`;
        mediaStore.set(mxc, {
          data: body,
          contentType: req.headers["content-type"] ?? "application/octet-stream",
          fileName: url.searchParams.get("filename") ?? undefined,
        });
        return json(res, 200, { content_uri: mxc });
      }
      if (method === "GET" && path === "/_matrix/client/v1/media/config") return json(res, 200, { "m.upload.size": MAX_UPLOAD_BYTES });
      m = method === "GET" ? p(/^\/_matrix\/client\/v1\/media\/download\/([^/]+)\/([^/]+)(?:\/[^/]+)?$/) : undefined;
      if (m) {
        if (held) {
          held.count++;
          await held.gate;
        }
        const media = mediaStore.get(`mxc://${m[0]}/${m[1]}`);
        if (!media) throw new MatrixHttpError(404, "M_NOT_FOUND", "Not found");
        res.writeHead(200, {
          "content-type": media.contentType,
          "content-length": String(media.data.length),
          "content-disposition": `attachment; filename="${media.fileName ?? "file"}"`,
        });
        res.end(media.data);
        return;
      }
      throw new MatrixHttpError(404, "M_UNRECOGNIZED", "Unrecognized request");
    } catch (error) {
      if (error instanceof MatrixHttpError) return json(res, error.status, { errcode: error.errcode, error: error.message, ...error.extra });
      return json(res, 500, { errcode: "M_UNKNOWN", error: String(error) });
    }
  }

  // The unauthenticated download is frozen (v1.11): answered before any token is looked at.
  const server = createServer((req, res) => {
    if ((req.url ?? "").startsWith("/_matrix/media/v3/download/") || (req.url ?? "").startsWith("/_matrix/media/v3/thumbnail/")) {
      json(res, 404, { errcode: "M_NOT_FOUND", error: "Unauthenticated media is frozen: use /_matrix/client/v1/media/download" });
      return;
    }
    void route(req, res);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  function shown(roomId: string, sender: string) {
    const messages = log.filter((s) => s.event.room_id === roomId && s.event.type === "m.room.message" && s.event.sender === sender && !s.redacted);
    const isEdit = (e: MatrixEvent) => (e.content["m.relates_to"] as { rel_type?: string } | undefined)?.rel_type === "m.replace";
    return messages
      .filter((s) => !isEdit(s.event))
      .map((s) => {
        const edits = messages.filter((e) => isEdit(e.event) && (e.event.content["m.relates_to"] as { event_id?: string }).event_id === s.event.event_id);
        const latest = edits.at(-1)?.event.content["m.new_content"] as Record<string, unknown> | undefined;
        const content = latest ?? s.event.content;
        return {
          event: s.event,
          body: String(content.body ?? ""),
          html: typeof content.formatted_body === "string" ? content.formatted_body : undefined,
        };
      });
  }

  return {
    url: `http://127.0.0.1:${port}`,
    serverName,
    register,
    createRoom,
    invite,
    inject(roomId, sender, type, content) {
      const user = users.get(sender);
      if (!user) throw new Error(`no user ${sender}`);
      const id = send(user, roomId, type, newId("inject"), content);
      return byId.get(id)?.event as MatrixEvent;
    },
    events: (roomId) => log.filter((s) => s.event.room_id === roomId).map(clientEvent),
    shown,
    reactions: (roomId, eventId, sender) =>
      log
        .filter((s) => !s.redacted && s.event.room_id === roomId && s.event.type === "m.reaction" && s.event.sender === sender)
        .flatMap((s) => {
          const rel = s.event.content["m.relates_to"] as { rel_type?: string; event_id?: string; key?: string } | undefined;
          return rel?.rel_type === "m.annotation" && rel.event_id === eventId && rel.key ? [rel.key] : [];
        }),
    members: (roomId) => [...(membership.get(roomId) ?? new Map<string, string>()).entries()].filter(([, m]) => m === "join").map(([u]) => u),
    typing,
    requests,
    media: (mxc) => mediaStore.get(mxc),
    rateLimit: (pathPart, count, retryAfterMs) => void limits.push({ pathPart, count, retryAfterMs }),
    dropNextSync: (userId) => void drops.add(userId),
    position: () => pos,
    holdDownloads() {
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const hold = { count: 0, gate, open };
      held = hold;
      return {
        arrived: () => hold.count,
        release() {
          if (held === hold) held = undefined;
          hold.open();
        },
      };
    },
    repeat: (userId, eventId) => void repeats.set(userId, [...(repeats.get(userId) ?? []), eventId]),
    async close() {
      wake();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown) {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function parseJson(body: Buffer): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body.toString("utf8") || "{}");
    if (value && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new MatrixHttpError(400, "M_NOT_JSON", "Content not JSON.");
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
