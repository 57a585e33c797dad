/**
 * A fake of Teams' side of a bot, for what Microsoft's local Agents Playground
 * does not check (it sends no token): the Bot Connector posting activities to
 * the bot with a Bot Framework JWT signed by keys of its own, published as
 * OpenID metadata; the identity platform's token endpoint (client
 * credentials); and the connector service the bot replies to. Rules followed
 * (learn.microsoft.com, "Authenticate requests with the Bot Connector API"):
 * the connector's token is RS256, `iss` https://api.botframework.com, `aud`
 * the bot's app id, `serviceurl` the activity's serviceUrl, signed by a key
 * of the metadata's `jwks_uri` carrying `endorsements` for the channel; the
 * bot's calls to the connector carry `Authorization: Bearer <token from the
 * token endpoint>` and are refused 401 without it; throttled calls answer 429
 * with `Retry-After` ("Rate limiting for bots", Teams docs). Teams' own
 * streaming ("Stream bot messages", Teams docs; the Agents SDK's
 * StreamingResponse): in a personal chat only (elsewhere 400 BadArgument
 * "Streaming API is not enabled", the refusal the SDK recognises), `typing`
 * activities with a `streaminfo` entity, the first without a streamId (its
 * answer's id names the stream) and sequence 1, each later one naming the
 * stream with a higher sequence; `informative` updates (at most 1000
 * characters, shown as a progress bar, not as the message) may come before
 * the text, `streaming` ones carry text that continues the text so far
 * (else 403 "Request streamed content should contain the previously
 * streamed content"); a `message` with `streamType: "final"` ends it; a
 * stream is ended by Teams two minutes after it began (then 403 "Content
 * stream finished due to exceeded streaming time."), and nothing may be
 * streamed into an ended stream (403 ContentStreamNotAllowed). The fake's
 * clock is injectable (`now`) so the two minutes pass in a test. Not
 * checked: Teams' one-update-a-second throttle (the daemon paces edits at
 * 1.5 s itself); two open streams in one chat (Teams allows one) are
 * counted, not refused, as Teams documents no answer for it.
 */
import { createSign, generateKeyPairSync, type KeyObject, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeTeamsOptions {
  appId: string;
  appPassword: string;
  tenantId: string;
  /** Seconds a token from the token endpoint lasts. Default 3600. */
  tokenSeconds?: number;
  /** The fake's clock for streams' two minutes, ms. Default Date.now. */
  now?: () => number;
}

/** Teams ends a stream this long after it began. */
export const TEAMS_STREAM_LIMIT_MS = 2 * 60 * 1000;

export interface ShownMessage {
  id: string;
  text: string;
  attachments: unknown[];
  /** How many times it was updated. */
  edits: number;
  /** A reply streamed with Teams' protocol: "streaming" while open, "final" once ended. */
  stream?: "streaming" | "final";
  /** How many streaming updates it got (the first included). */
  streamUpdates?: number;
  /** The informative updates of its stream, in order. */
  informative?: string[];
  /** Its stream was ended by Teams' time limit, not by a final message. */
  timedOut?: boolean;
}

/** One activity of Teams' streaming protocol the fake took (or refused). */
export interface StreamActivity {
  conversationId: string;
  streamId: string | undefined;
  type: string | undefined;
  streamType: string | undefined;
  streamSequence: number | undefined;
  text: string;
  status: number;
}

interface StreamInfo {
  streamType?: string;
  streamSequence?: number;
  streamId?: string;
}

export interface TokenForgery {
  /** Sign with a key the metadata does not list. */
  foreignKey?: boolean;
  /** Claims to change (exp in seconds since epoch). */
  claims?: Record<string, unknown>;
  /** No Authorization header at all. */
  none?: boolean;
}

export interface PostOptions {
  /** "personal" (default), "groupChat" or "channel". */
  conversationType?: "personal" | "groupChat" | "channel";
  conversationId?: string;
  mention?: boolean;
  forge?: TokenForgery;
  tenantId?: string;
  from?: { id: string; name: string; aadObjectId?: string };
  attachments?: unknown[];
  value?: unknown;
  id?: string;
}

export type FakeTeams = Awaited<ReturnType<typeof createFakeTeams>>;

interface SigningPair {
  kid: string;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
}

function signingPair(): SigningPair {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const kid = randomUUID();
  return { kid, privateKey, jwk: { ...publicKey.export({ format: "jwk" }), kid, use: "sig", endorsements: ["msteams"] } };
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url");

/** What the chat shows: a stream that has had only informative updates is a progress bar, not a message. */
const isShown = (m: ShownMessage): boolean => !(m.stream && m.text === "" && (m.informative?.length ?? 0) > 0 && m.streamUpdates === 0);

export async function createFakeTeams(options: FakeTeamsOptions) {
  const keys = [signingPair()];
  const foreign = signingPair();
  const issued = new Set<string>();
  const conversations = new Map<string, ShownMessage[]>();
  const typing = new Map<string, number>();
  /** The kind of each conversation activities came from (personal, groupChat, channel). */
  const kinds = new Map<string, string>();
  /** Stream id -> the last sequence it got, and when it began. */
  const sequences = new Map<string, number>();
  const started = new Map<string, number>();
  const streamLog: StreamActivity[] = [];
  let overlaps = 0;
  const now = options.now ?? Date.now;
  const files = new Map<string, Buffer>();
  /** What people uploaded to "their OneDrive" after accepting a consent card, by name. */
  const uploads = new Map<string, Buffer>();
  let consent: "accept" | "decline" = "accept";
  const failures: { status: number; retryAfter?: string }[] = [];
  const calls: { method: string; path: string; status: number }[] = [];
  let tokenRequests = 0;
  let metadataReads = 0;
  let botEndpoint = "";
  let nextId = 1;

  const server = createServer((req, res) => void route(req, res).catch(() => res.writeHead(500).end()));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serviceUrl = `${base}/connector/`;

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", base);
    const body = await read(req);
    if (req.method === "GET" && url.pathname === "/openid") {
      metadataReads += 1;
      return json(res, 200, { issuer: "https://api.botframework.com", jwks_uri: `${base}/keys`, id_token_signing_alg_values_supported: ["RS256"] });
    }
    if (req.method === "GET" && url.pathname === "/keys") return json(res, 200, { keys: keys.map((k) => k.jwk) });
    if (req.method === "POST" && url.pathname === "/token") return token(res, new URLSearchParams(body.toString("utf8")));
    if (req.method === "GET" && url.pathname.startsWith("/files/")) {
      const data = files.get(decodeURIComponent(url.pathname.slice("/files/".length)));
      return data ? void res.writeHead(200, { "content-type": "application/octet-stream" }).end(data) : void res.writeHead(404).end();
    }
    if (req.method === "PUT" && url.pathname.startsWith("/upload/")) {
      uploads.set(decodeURIComponent(url.pathname.slice("/upload/".length)), body);
      return json(res, 201, { id: "drive-item" });
    }
    if (url.pathname.startsWith("/connector/v3/conversations/")) return connector(req, res, url, body);
    res.writeHead(404).end();
  }

  function token(res: ServerResponse, form: URLSearchParams) {
    tokenRequests += 1;
    if (form.get("grant_type") !== "client_credentials" || form.get("client_id") !== options.appId || form.get("client_secret") !== options.appPassword) {
      return json(res, 401, { error: "invalid_client", error_description: "AADSTS7000215: Invalid client secret provided." });
    }
    const accessToken = `fake-teams-token-${randomUUID()}`;
    issued.add(accessToken);
    json(res, 200, { token_type: "Bearer", expires_in: options.tokenSeconds ?? 3600, access_token: accessToken });
  }

  function connector(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer) {
    const path = url.pathname.slice("/connector/v3/conversations/".length);
    const [conversationId = "", , activityId] = path.split("/").map(decodeURIComponent);
    const done = (status: number, value?: unknown, headers: Record<string, string> = {}) => {
      calls.push({ method: req.method ?? "", path: url.pathname, status });
      value === undefined ? res.writeHead(status, headers).end() : json(res, status, value, headers);
    };
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!auth || !issued.has(auth)) return done(401, { error: { code: "Unauthorized", message: "Authorization has been denied for this request." } });
    const failure = failures.shift();
    if (failure) return done(failure.status, { error: { code: "Throttled" } }, failure.retryAfter ? { "retry-after": failure.retryAfter } : {});
    const activity = JSON.parse(body.toString("utf8") || "{}") as { type?: string; text?: string; attachments?: unknown[]; entities?: unknown[] };
    const shown = conversations.get(conversationId) ?? [];
    conversations.set(conversationId, shown);
    const info = activity.entities?.find((e): e is StreamInfo => (e as { type?: string }).type === "streaminfo");
    if (req.method === "POST" && info) return stream(conversationId, shown, activity, info, done);
    if (req.method === "POST") {
      if (activity.type === "typing") {
        typing.set(conversationId, (typing.get(conversationId) ?? 0) + 1);
        return done(200, {});
      }
      const id = `m${nextId++}`;
      shown.push({ id, text: activity.text ?? "", attachments: activity.attachments ?? [], edits: 0 });
      done(200, { id });
      for (const card of activity.attachments ?? []) answerConsent(conversationId, card);
      return;
    }
    if (req.method === "PUT" && activityId) {
      const message = shown.find((m) => m.id === activityId);
      if (!message) return done(404, { error: { code: "ActivityNotFound" } });
      message.text = activity.text ?? "";
      message.attachments = activity.attachments ?? [];
      message.edits += 1;
      return done(200, { id: activityId });
    }
    done(405);
  }

  /** One activity of Teams' streaming protocol, logged with its answer. */
  function stream(
    conversationId: string,
    shown: ShownMessage[],
    activity: { type?: string; text?: string },
    info: StreamInfo,
    done: (status: number, value?: unknown) => void,
  ) {
    const entry: StreamActivity = {
      conversationId,
      streamId: info.streamId,
      type: activity.type,
      streamType: info.streamType,
      streamSequence: info.streamSequence,
      text: activity.text ?? "",
      status: 0,
    };
    streamLog.push(entry);
    streamStep(conversationId, shown, activity, info, (status, value) => {
      entry.status = status;
      done(status, value);
    });
  }

  function streamStep(
    conversationId: string,
    shown: ShownMessage[],
    activity: { type?: string; text?: string },
    info: StreamInfo,
    done: (status: number, value?: unknown) => void,
  ) {
    const badArgument = (message: string) => done(400, { error: { code: "BadArgument", message } });
    const notAllowed = (message: string) => done(403, { error: { code: "ContentStreamNotAllowed", message } });
    if (kinds.get(conversationId) !== "personal") return badArgument("Streaming API is not enabled for this conversation");
    const kind = info.streamType;
    const text = activity.text ?? "";
    if (kind === "informative" && text.length > 1000) return done(400, { error: { code: "BadRequest", message: "Message size too large" } });
    if (!info.streamId) {
      if (activity.type !== "typing" || (kind !== "streaming" && kind !== "informative") || info.streamSequence !== 1)
        return badArgument("a stream starts with a typing activity (informative or streaming) of sequence 1");
      if (shown.some((m) => m.stream === "streaming" && !expired(m))) overlaps += 1;
      const id = `m${nextId++}`;
      shown.push({
        id,
        text: kind === "streaming" ? text : "",
        attachments: [],
        edits: 0,
        stream: "streaming",
        streamUpdates: kind === "streaming" ? 1 : 0,
        informative: kind === "informative" ? [text] : [],
      });
      sequences.set(id, 1);
      started.set(id, now());
      return done(201, { id });
    }
    const message = shown.find((m) => m.id === info.streamId && m.stream);
    if (!message) return done(404, { error: { code: "ActivityNotFound" } });
    if (message.stream === "streaming" && expired(message)) {
      message.stream = "final";
      message.timedOut = true;
    }
    if (message.timedOut) return notAllowed("Content stream finished due to exceeded streaming time.");
    if (message.stream === "final") return notAllowed("Content stream is not allowed on an already completed streamed message.");
    const last = sequences.get(message.id) ?? 0;
    if (kind === "streaming" || kind === "informative") {
      if (activity.type !== "typing") return badArgument("a streaming or informative update is a typing activity");
      if (typeof info.streamSequence !== "number" || info.streamSequence <= last) return badArgument("streamSequence must increase");
      sequences.set(message.id, info.streamSequence);
      if (kind === "informative") {
        message.informative = [...(message.informative ?? []), text];
        return done(202, { id: message.id });
      }
      if (!text.startsWith(message.text)) return notAllowed("Request streamed content should contain the previously streamed content");
      message.text = text;
      message.streamUpdates = (message.streamUpdates ?? 0) + 1;
      return done(202, { id: message.id });
    }
    if (kind === "final" && activity.type === "message") {
      if (info.streamSequence !== undefined && info.streamSequence <= last) return badArgument("streamSequence must increase");
      message.text = text;
      message.stream = "final";
      return done(202, { id: message.id });
    }
    return badArgument("a stream ends with a message activity of streamType final");
  }

  /** Whether Teams has ended the stream of `message` for its time (two minutes after it began). */
  function expired(message: ShownMessage): boolean {
    return now() - (started.get(message.id) ?? now()) >= TEAMS_STREAM_LIMIT_MS;
  }

  /** The person answers a file consent card the way Teams posts it: an invoke naming the upload URL in their OneDrive. */
  function answerConsent(conversationId: string, card: unknown): void {
    const c = card as { contentType?: string; name?: string; content?: { acceptContext?: unknown; declineContext?: unknown } };
    if (c.contentType !== "application/vnd.microsoft.teams.card.file.consent" || !c.name) return;
    const name = c.name;
    const invoke = {
      ...activityOf("", { conversationId, mention: false }),
      type: "invoke",
      name: "fileConsent/invoke",
      text: undefined,
      value: {
        type: "fileUpload",
        action: consent,
        context: consent === "accept" ? c.content?.acceptContext : c.content?.declineContext,
        ...(consent === "accept"
          ? {
              uploadInfo: {
                name,
                uploadUrl: `${base}/upload/${encodeURIComponent(name)}`,
                contentUrl: `${base}/drive/${encodeURIComponent(name)}`,
                uniqueId: randomUUID(),
                fileType: name.split(".").pop(),
              },
            }
          : {}),
      },
    };
    void postActivity(invoke).catch(() => undefined);
  }

  function sign(claims: Record<string, unknown>, pair: SigningPair): string {
    const input = `${b64({ alg: "RS256", typ: "JWT", kid: pair.kid })}.${b64(claims)}`;
    const signature = createSign("RSA-SHA256").update(input).sign(pair.privateKey).toString("base64url");
    return `${input}.${signature}`;
  }

  function activityOf(text: string, o: PostOptions) {
    const type = o.conversationType ?? "personal";
    const from = o.from ?? { id: "29:alice", name: "Alice", aadObjectId: "aad-alice" };
    const id = o.id ?? (type === "channel" && !o.conversationId ? String(1_700_000_000_000 + nextId++) : `act-${nextId++}`);
    // A new channel post roots its reply chain: the chain's conversation id names the post's own id.
    const conversationId =
      o.conversationId ?? (type === "personal" ? "a:personal-alice" : type === "groupChat" ? "19:group@thread.v2" : `19:general@thread.tacv2;messageid=${id}`);
    const bot = { id: `28:${options.appId}`, name: "Bridge" };
    const mention = o.mention ?? type !== "personal";
    kinds.set(conversationId, type);
    return {
      type: "message",
      id,
      timestamp: new Date().toISOString(),
      serviceUrl,
      channelId: "msteams",
      from,
      recipient: bot,
      conversation: { id: conversationId, conversationType: type, tenantId: o.tenantId ?? options.tenantId, ...(type !== "personal" ? { isGroup: true } : {}) },
      text: mention ? `<at>Bridge</at> ${text}` : text,
      textFormat: "plain",
      ...(mention ? { entities: [{ type: "mention", mentioned: bot, text: "<at>Bridge</at>" }] } : {}),
      channelData: {
        tenant: { id: o.tenantId ?? options.tenantId },
        ...(type === "channel" ? { team: { id: "19:team@thread.tacv2" }, channel: { id: "19:general@thread.tacv2" } } : {}),
      },
      ...(o.attachments ? { attachments: o.attachments } : {}),
      ...(o.value !== undefined ? { value: o.value } : {}),
    };
  }

  /** Posts an activity the way the Bot Connector does; resolves with the bot's HTTP status. */
  async function postActivity(activity: object, forge: TokenForgery = {}): Promise<number> {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: "https://api.botframework.com", aud: options.appId, exp: now + 3600, nbf: now - 60, serviceurl: serviceUrl, ...forge.claims };
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (!forge.none) headers.authorization = `Bearer ${sign(claims, forge.foreignKey ? foreign : (keys[0] as SigningPair))}`;
    const response = await fetch(botEndpoint, { method: "POST", headers, body: JSON.stringify(activity) });
    await response.arrayBuffer();
    return response.status;
  }

  return {
    serviceUrl,
    openIdMetadata: `${base}/openid`,
    tokenEndpoint: `${base}/token`,
    /** Where the bot listens (the fake posts there). */
    setBotEndpoint(url: string) {
      botEndpoint = url;
    },
    /** A person writes; resolves with the bot's HTTP status and the activity posted. */
    async say(text: string, o: PostOptions = {}) {
      const activity = activityOf(text, o);
      return { status: await postActivity(activity, o.forge), activity };
    },
    postActivity,
    activityOf,
    /** Serves `data` at a download URL for an inbound file. */
    file(name: string, data: Buffer): string {
      files.set(name, data);
      return `${base}/files/${encodeURIComponent(name)}`;
    },
    /** How people answer file consent cards from now on. */
    consentWith(answer: "accept" | "decline") {
      consent = answer;
    },
    uploaded: (name: string): Buffer | undefined => uploads.get(name),
    /** The next connector calls fail with these statuses, in order. */
    failNext(...f: { status: number; retryAfter?: string }[]) {
      failures.push(...f);
    },
    /** Rolls the signing keys over: a new key signs, the metadata lists both. */
    rollKeys() {
      keys.unshift(signingPair());
    },
    /** A conversation's messages as the chat shows them (see isShown). */
    messages: (conversationId: string): ShownMessage[] => (conversations.get(conversationId) ?? []).filter(isShown),
    /** A chat's messages with those of its channel's reply chains (`<channel>;messageid=<root>`), as the channel shows them. */
    chatMessages: (chatId: string): ShownMessage[] =>
      [...conversations].flatMap(([id, shown]) => (id === chatId || id.startsWith(`${chatId};messageid=`) ? shown.filter(isShown) : [])),
    /** Every activity of Teams' streaming protocol the fake was sent, with its answer. */
    streamActivities: (conversationId?: string): StreamActivity[] =>
      streamLog.filter((e) => conversationId === undefined || e.conversationId === conversationId),
    /** How many streams were begun in a chat that had one open (Teams allows one). */
    overlappingStreams: () => overlaps,
    typing: (conversationId: string): number => typing.get(conversationId) ?? 0,
    calls: () => [...calls],
    tokenRequests: () => tokenRequests,
    metadataReads: () => metadataReads,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
}

function read(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
