/**
 * A local stand-in for Google Chat and the Google endpoints an HTTP endpoint
 * app meets, on one HTTP server bound to 127.0.0.1, port 0, obeying Google's
 * documented rules, not the bridge's code:
 *
 * - Chat posts each interaction event to the app's endpoint with a bearer
 *   token Google signed (developers.google.com/workspace/chat/verify-requests-from-chat):
 *   audience type PROJECT_NUMBER, a JWT with issuer and signer
 *   chat@system.gserviceaccount.com, audience the project number, its keys
 *   published as X.509 certificates at
 *   `/service_accounts/v1/metadata/x509/chat@system.gserviceaccount.com`;
 *   HTTP_ENDPOINT_URL, a Google OIDC ID token (issuer
 *   https://accounts.google.com, email chat@system.gserviceaccount.com,
 *   email_verified) whose audience is the endpoint URL, its keys at
 *   `/oauth2/v1/certs`. Tokens live an hour. `forge` signs with a key Google
 *   never published, or with other claims, for the tests of refusals.
 * - An event's answer: a 200 whose body is a message (text or cardsV2) is that
 *   message, posted by the app into the event's thread (the synchronous reply);
 *   an empty body or `{}` posts nothing. Chat does not post an event again.
 * - A MESSAGE event in a space reaches the app only when it @mentions the app:
 *   `text` has the mention, `argumentText` the rest, `annotations` a
 *   USER_MENTION of the app (type BOT). Each top-level message in a space
 *   starts a thread; a DM is one conversation.
 * - The token endpoint (`/token`): a service account's signed assertion
 *   (RFC 7523, `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`),
 *   checked against the account's public key, `aud` Google's token URL and `exp`
 *   at most an hour after `iat`, traded for an access token that lives an hour;
 *   else 400 `invalid_grant`.
 * - The Chat API (REST, JSON; errors as `{error:{code,message,status}}`), an
 *   access token from `/token` or a self-signed JWT of the service account in
 *   `Authorization: Bearer` (else 401 UNAUTHENTICATED):
 *   `spaces.list`; `spaces.messages.create` (text at most 4,096 characters, else
 *   400 INVALID_ARGUMENT; `thread.name` honoured only with a
 *   `messageReplyOption`: REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD starts a new
 *   thread when the named one does not exist, REPLY_MESSAGE_OR_FAIL answers 404;
 *   without one, a new thread; a `requestId` seen before answers with the message it made);
 *   `spaces.messages.update`/`patch` (PUT/PATCH; an `updateMask` is
 *   required; only the app's own messages, else 403 PERMISSION_DENIED; 404 for
 *   an unknown message); `media.download` (`/v1/media/{resourceName}?alt=media`)
 *   of attachments people sent; `media.upload` refused to an app (403: it takes
 *   user authentication); reactions likewise. Cards: an image widget's
 *   host URL must be HTTPS and an `openLink` URL absolute, else 400
 *   INVALID_ARGUMENT (developers.google.com/workspace/chat/add-text-image-card-dialog).
 * - Quotas (developers.google.com/workspace/chat/limits): message writes
 *   (create, patch) per space and per project within a window; over either,
 *   429 RESOURCE_EXHAUSTED and nothing done. Defaults: 1 write a second per
 *   space, 3,000 a minute per project; a test may give a larger burst.
 */
import { createSign, createVerify, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { CHAT_SIGNING_CERT, CHAT_SIGNING_KEY } from "./googlechat-keys.js";

const CHAT = "chat@system.gserviceaccount.com";
const MAX_TEXT = 4096;
const APP_USER = "users/app";
const TOKEN_LIFETIME_S = 3600;

export interface FakeChatMessage {
  name: string;
  sender: { name: string; displayName?: string; type: "HUMAN" | "BOT" };
  text: string;
  thread: { name: string };
  /** Chat's own: true for a reply in an existing thread; absent on a message that starts one. */
  threadReply?: boolean;
  space: { name: string };
  createTime: string;
  cardsV2?: CardWithId[];
  attachment?: { name: string; contentName: string; contentType: string; attachmentDataRef: { resourceName: string }; source: "UPLOADED_CONTENT" }[];
  /** Shown to this user only (a private message, given in an answer to an event in a space). */
  privateMessageViewer?: { name: string };
  /** How it was posted: through the API, or as the answer to an event. */
  via: "api" | "response" | "person";
}

interface CardWithId {
  cardId?: string;
  card?: {
    sections?: {
      widgets?: {
        buttonList?: {
          buttons?: {
            text?: string;
            onClick?: { action?: { function?: string; parameters?: { key: string; value: string }[] }; openLink?: { url?: string } };
          }[];
        };
        image?: { imageUrl?: string; altText?: string };
      }[];
    }[];
  };
}

interface Space {
  name: string;
  spaceType: "DIRECT_MESSAGE" | "SPACE";
  messages: FakeChatMessage[];
}

export interface FakeGoogleChatOptions {
  audienceType: "project-number" | "app-url";
  /** The project number, or the endpoint URL (set later with `setEndpoint` when it is not known yet). */
  audience?: string;
  endpoint?: string;
  /** Message writes allowed per space within `spaceWindowMs`. Default 1 (a second). */
  spaceWrites?: number;
  spaceWindowMs?: number;
  /** Message writes allowed per project within a minute. Default 3000. */
  projectWrites?: number;
  now?: () => number;
}

export interface EventAnswer {
  status: number;
  body: string;
}

export interface FakeGoogleChat {
  /** `http://127.0.0.1:port`: the Chat API base (the channel's `api`). */
  readonly url: string;
  readonly certsUrl: string;
  readonly tokenUri: string;
  /** A service account key (JSON text) the token endpoint accepts. */
  readonly serviceAccountKey: string;
  setEndpoint(url: string, audience?: string): void;
  /** A person writes in a DM or a space (mentioning the app when `mention`); the event is posted and its answer awaited. */
  say(input: SayInput): { message: FakeChatMessage; answered: Promise<EventAnswer> };
  /** A person clicks button `index` of the app's card message. */
  tap(messageName: string, index: number, user?: string): Promise<EventAnswer>;
  /** Posts any event with a token of the caller's choosing (forged ones included). */
  post(event: unknown, token?: string): Promise<EventAnswer>;
  /** A token as Chat signs it for the configured audience, with `claims` over it and optionally another key. */
  token(claims?: Record<string, unknown>, options?: { forged?: boolean; kid?: string }): string;
  messages(space: string): FakeChatMessage[];
  /** Every API request: `METHOD path status`. */
  calls(): string[];
  /** Makes the next `n` message writes answer 429 (a quota the app cannot see). */
  exhaust(n: number): void;
  close(): Promise<void>;
}

export interface SayInput {
  space: string;
  user?: string;
  userName?: string;
  text: string;
  /** In a space: the thread to write in (a new one when absent). */
  thread?: string;
  /** Default: true in a space. */
  mention?: boolean;
  attachments?: { contentName: string; contentType: string; data: Buffer }[];
}

const b64 = (value: object | Buffer): string => (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString("base64url");

function signJwt(header: object, claims: object, key: KeyObject | string): string {
  const unsigned = `${b64(header)}.${b64(claims)}`;
  return `${unsigned}.${createSign("RSA-SHA256").update(unsigned).sign(key).toString("base64url")}`;
}

/** The forger's key and the service account's, made once per process (an RSA key takes a moment; every fake may share them). */
let keys: { forger: KeyObject; account: { publicKey: KeyObject; privateKey: KeyObject } } | undefined;
const testKeys = () => {
  keys ??= { forger: generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey, account: generateKeyPairSync("rsa", { modulusLength: 2048 }) };
  return keys;
};

/** Why Chat would refuse these cards: an image widget's host URL must be HTTPS, a link's URL absolute http(s). */
function invalidCard(cards: CardWithId[]): string | undefined {
  for (const widget of cards.flatMap((c) => c.card?.sections ?? []).flatMap((s) => s.widgets ?? [])) {
    const image = widget.image?.imageUrl;
    if (widget.image && (typeof image !== "string" || !image.startsWith("https://") || !URL.canParse(image)))
      return "Invalid image URL: the host URL must be HTTPS.";
    for (const button of widget.buttonList?.buttons ?? []) {
      const link = button.onClick?.openLink;
      if (link && (typeof link.url !== "string" || !/^https?:\/\//.test(link.url) || !URL.canParse(link.url))) return "Invalid link URL.";
    }
  }
  return undefined;
}

export async function createFakeGoogleChat(options: FakeGoogleChatOptions): Promise<FakeGoogleChat> {
  const now = options.now ?? (() => Date.now());
  const chatKid = "chat-key-1";
  const oidcKid = "oidc-key-1";
  const { forger, account } = testKeys();
  const accountEmail = "agent-bridge@fake-project.iam.gserviceaccount.com";
  const accessTokens = new Set<string>();
  const spaces = new Map<string, Space>();
  const media = new Map<string, Buffer>();
  /** `<space> <requestId>` → the message that create made. */
  const createdBy = new Map<string, string>();
  const calls: string[] = [];
  const spaceWrites = new Map<string, number[]>();
  const projectWrites: number[] = [];
  let exhausted = 0;
  let endpoint = options.endpoint;
  let audience = options.audience;
  let counter = 0;
  const id = () => `${(++counter).toString(36)}${randomBytes(4).toString("hex")}`;

  /** A space named `spaces/dm-...` is a direct message with the app; any other a space. */
  const spaceOf = (name: string, spaceType: Space["spaceType"] = name.includes("dm-") ? "DIRECT_MESSAGE" : "SPACE"): Space => {
    let space = spaces.get(name);
    if (!space) {
      space = { name, spaceType, messages: [] };
      spaces.set(name, space);
    }
    return space;
  };

  const token = (claims: Record<string, unknown> = {}, opts: { forged?: boolean; kid?: string } = {}): string => {
    const iat = Math.floor(now() / 1000);
    const base =
      options.audienceType === "project-number"
        ? { iss: CHAT, aud: audience, iat, exp: iat + TOKEN_LIFETIME_S }
        : { iss: "https://accounts.google.com", aud: audience, email: CHAT, email_verified: true, sub: "113", azp: "113", iat, exp: iat + TOKEN_LIFETIME_S };
    const kid = opts.kid ?? (options.audienceType === "project-number" ? chatKid : oidcKid);
    return signJwt({ alg: "RS256", typ: "JWT", kid }, { ...base, ...claims }, opts.forged ? forger : CHAT_SIGNING_KEY);
  };

  const post = async (event: unknown, bearer = token()): Promise<EventAnswer> => {
    if (!endpoint) throw new Error("the fake has no app endpoint yet (setEndpoint)");
    const response = await fetch(endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", "user-agent": "Google-Dynamite" },
      body: JSON.stringify(event),
    });
    const body = await response.text();
    postAnswer(event, response.status, body);
    return { status: response.status, body };
  };

  /** A 200 carrying a message is the app's reply, into the event's thread. */
  function postAnswer(event: unknown, status: number, body: string): void {
    if (status !== 200 || !body.trim()) return;
    const reply = JSON.parse(body) as { text?: string; cardsV2?: CardWithId[]; privateMessageViewer?: { name: string } };
    if (reply.text === undefined && reply.cardsV2 === undefined) return;
    const e = event as { space?: { name: string }; message?: { thread?: { name: string } } };
    if (!e.space) return;
    const space = spaceOf(e.space.name);
    space.messages.push({
      name: `${space.name}/messages/${id()}`,
      sender: { name: APP_USER, type: "BOT" },
      text: reply.text ?? "",
      thread: { name: e.message?.thread?.name ?? `${space.name}/threads/${id()}` },
      space: { name: space.name },
      createTime: new Date(now()).toISOString(),
      ...(reply.cardsV2 ? { cardsV2: reply.cardsV2 } : {}),
      ...(reply.privateMessageViewer ? { privateMessageViewer: reply.privateMessageViewer } : {}),
      via: "response",
    });
  }

  function say(input: SayInput): { message: FakeChatMessage; answered: Promise<EventAnswer> } {
    const space = spaceOf(input.space);
    const inSpace = space.spaceType === "SPACE";
    const mention = inSpace && (input.mention ?? true);
    const user = input.user ?? "users/alice";
    const mid = id();
    const text = mention ? `@Agent Bridge ${input.text}` : input.text;
    const message: FakeChatMessage = {
      name: `${space.name}/messages/${mid}.${mid}`,
      sender: { name: user, displayName: input.userName ?? "Alice", type: "HUMAN" },
      text,
      thread: { name: input.thread ?? `${space.name}/threads/${mid}` },
      ...(input.thread ? { threadReply: true } : {}),
      space: { name: space.name },
      createTime: new Date(now()).toISOString(),
      via: "person",
      ...(input.attachments
        ? {
            attachment: input.attachments.map((a) => {
              const resourceName = `ref-${id()}`;
              media.set(resourceName, a.data);
              return {
                name: `${space.name}/messages/${mid}.${mid}/attachments/${id()}`,
                contentName: a.contentName,
                contentType: a.contentType,
                attachmentDataRef: { resourceName },
                source: "UPLOADED_CONTENT" as const,
              };
            }),
          }
        : {}),
    };
    space.messages.push(message);
    const { via: _via, ...shown } = message;
    const event = {
      type: "MESSAGE",
      eventTime: message.createTime,
      space: { name: space.name, type: inSpace ? "ROOM" : "DM", spaceType: space.spaceType, ...(inSpace ? {} : { singleUserBotDm: true }) },
      user: message.sender,
      message: {
        ...shown,
        ...(mention
          ? {
              argumentText: ` ${input.text}`,
              annotations: [
                {
                  type: "USER_MENTION",
                  startIndex: 0,
                  length: 13,
                  userMention: { user: { name: APP_USER, displayName: "Agent Bridge", type: "BOT" }, type: "MENTION" },
                },
              ],
            }
          : {}),
      },
    };
    // Chat sends an app nothing from a space that does not mention it.
    // Nor anything while no app endpoint is configured (the message is only kept).
    const answered = (inSpace && !mention) || endpoint === undefined ? Promise.resolve({ status: 0, body: "" }) : post(event);
    return { message, answered };
  }

  async function tap(messageName: string, index: number, user = "users/alice"): Promise<EventAnswer> {
    const spaceName = messageName.split("/messages/")[0] ?? "";
    const space = spaceOf(spaceName);
    const message = space.messages.find((m) => m.name === messageName);
    const button = message?.cardsV2
      ?.flatMap((c) => c.card?.sections ?? [])
      .flatMap((s) => s.widgets ?? [])
      .flatMap((w) => w.buttonList?.buttons ?? [])[index];
    const action = button?.onClick?.action;
    if (!message || !action) throw new Error(`no button ${index} on ${messageName}`);
    const { via: _via, ...shown } = message;
    const parameters = action.parameters ?? [];
    return post({
      type: "CARD_CLICKED",
      eventTime: new Date(now()).toISOString(),
      space: { name: space.name, type: space.spaceType === "SPACE" ? "ROOM" : "DM", spaceType: space.spaceType },
      user: { name: user, displayName: "Alice", type: "HUMAN" },
      message: shown,
      action: { actionMethodName: action.function, parameters },
      common: { invokedFunction: action.function, parameters: Object.fromEntries(parameters.map((p) => [p.key, p.value])) },
    });
  }

  // --- the HTTP side: certificates, token endpoint, Chat API ---

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
  };
  const apiError = (res: ServerResponse, code: number, status: string, message: string) => send(res, code, { error: { code, message, status } });

  const readBody = (req: IncomingMessage): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => resolve(Buffer.concat(chunks)));
      req.on("error", reject);
    });

  function tokenEndpoint(body: Buffer, res: ServerResponse): void {
    const why = assertionRefusal(new URLSearchParams(body.toString("utf8")));
    if (why !== undefined) {
      send(res, 400, { error: why === "unsupported_grant_type" ? why : "invalid_grant", error_description: why });
      return;
    }
    const access = `ya29.fake-${randomBytes(16).toString("hex")}`;
    accessTokens.add(access);
    send(res, 200, { access_token: access, expires_in: TOKEN_LIFETIME_S, token_type: "Bearer" });
  }

  /** Why the token endpoint refuses a grant, or undefined when it takes it. */
  function assertionRefusal(form: URLSearchParams): string | undefined {
    const refuse = (why: string) => why;
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return "unsupported_grant_type";
    const [h, c, s] = (form.get("assertion") ?? "").split(".");
    if (!h || !c || !s) return refuse("Invalid JWT");
    if (!createVerify("RSA-SHA256").update(`${h}.${c}`).verify(account.publicKey, Buffer.from(s, "base64url"))) return refuse("Invalid JWT Signature.");
    const claims = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as { iss?: string; aud?: string; iat?: number; exp?: number; scope?: string };
    const t = now() / 1000;
    if (claims.iss !== accountEmail) return refuse("Invalid issuer");
    // The assertion's audience is Google's token URL whichever host serves it (developers.google.com/identity/protocols/oauth2/service-account).
    if (claims.aud !== "https://oauth2.googleapis.com/token") return refuse("Invalid JWT: aud");
    if (!claims.iat || !claims.exp || claims.exp - claims.iat > TOKEN_LIFETIME_S || claims.exp < t || claims.iat > t + 300)
      return refuse("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.");
    if (!claims.scope?.split(" ").includes("https://www.googleapis.com/auth/chat.bot")) return refuse("Invalid scope");
    return undefined;
  }

  /**
   * A self-signed JWT in place of an access token, as Google APIs take from a service account
   * (developers.google.com/identity/protocols/oauth2/service-account, "JWT authorization"; the
   * Chat client library sends one): signed by the account's key named by `kid`, `iss` and `sub`
   * the account, at most an hour long, and a `scope` with chat.bot or `aud` the API's URL.
   */
  function selfSignedAccepted(bearer: string): boolean {
    const [h, c, s] = bearer.split(".");
    if (!h || !c || !s) return false;
    const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8")) as { kid?: string };
    if (header.kid !== "sa-key-1") return false;
    if (!createVerify("RSA-SHA256").update(`${h}.${c}`).verify(account.publicKey, Buffer.from(s, "base64url"))) return false;
    const claims = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as {
      iss?: string;
      sub?: string;
      aud?: string;
      scope?: string;
      iat?: number;
      exp?: number;
    };
    const t = now() / 1000;
    if (claims.iss !== accountEmail || claims.sub !== accountEmail) return false;
    if (!claims.iat || !claims.exp || claims.exp - claims.iat > TOKEN_LIFETIME_S || claims.exp < t || claims.iat > t + 300) return false;
    return claims.scope?.split(" ").includes("https://www.googleapis.com/auth/chat.bot") === true || claims.aud === "https://chat.googleapis.com/";
  }

  /** Whether a message write is within the quotas now (and counts it). */
  function withinQuota(space: string): boolean {
    if (exhausted > 0) {
      exhausted--;
      return false;
    }
    const t = now();
    const windowMs = options.spaceWindowMs ?? 1000;
    const recent = (spaceWrites.get(space) ?? []).filter((at) => at > t - windowMs);
    const project = projectWrites.filter((at) => at > t - 60_000);
    projectWrites.splice(0, projectWrites.length, ...project);
    if (recent.length >= (options.spaceWrites ?? 1) || project.length >= (options.projectWrites ?? 3000)) {
      spaceWrites.set(space, recent);
      return false;
    }
    recent.push(t);
    projectWrites.push(t);
    spaceWrites.set(space, recent);
    return true;
  }

  const exhaustedAnswer = (res: ServerResponse) =>
    send(res, 429, {
      error: {
        code: 429,
        message: "Resource has been exhausted (e.g. check quota).",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "RATE_LIMIT_EXCEEDED", domain: "googleapis.com" }],
      },
    });

  /** `REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD` is 1, `REPLY_MESSAGE_OR_FAIL` 2 (the client sends enums as numbers). */
  const replyOption = (value: string | null): "fallback" | "or_fail" | "none" =>
    value === "1" || value === "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD" ? "fallback" : value === "2" || value === "REPLY_MESSAGE_OR_FAIL" ? "or_fail" : "none";

  async function api(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer): Promise<void> {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!bearer || !(accessTokens.has(bearer) || selfSignedAccepted(bearer)))
      return apiError(res, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials.");
    const path = decodeURIComponent(url.pathname);
    const create = req.method === "POST" ? /^\/v1\/(spaces\/[^/]+)\/messages$/.exec(path) : null;
    const update = req.method === "PATCH" || req.method === "PUT" ? /^\/v1\/(spaces\/[^/]+)\/messages\/([^/]+)$/.exec(path) : null;
    const download = req.method === "GET" && url.searchParams.get("alt") === "media" ? /^\/v1\/media\/(.+)$/.exec(path) : null;
    if (req.method === "GET" && path === "/v1/spaces")
      return send(res, 200, { spaces: [...spaces.values()].slice(0, 1).map((s) => ({ name: s.name, spaceType: s.spaceType })) });
    if (create) {
      const space = spaces.get(create[1] ?? "");
      if (!space) return apiError(res, 404, "NOT_FOUND", "Requested entity was not found.");
      const input = JSON.parse(body.toString("utf8") || "{}") as { text?: string; thread?: { name?: string }; cardsV2?: CardWithId[] };
      if ((input.text ?? "").length > MAX_TEXT) return apiError(res, 400, "INVALID_ARGUMENT", `Message text exceeds the maximum of ${MAX_TEXT} characters.`);
      if (!input.text && !input.cardsV2?.length) return apiError(res, 400, "INVALID_ARGUMENT", "Message cannot be empty.");
      const cardProblem = invalidCard(input.cardsV2 ?? []);
      if (cardProblem) return apiError(res, 400, "INVALID_ARGUMENT", cardProblem);
      // A request id seen before answers with the message it made (spaces.messages.create, `requestId`).
      const requestId = url.searchParams.get("requestId");
      const made = requestId ? createdBy.get(`${space.name} ${requestId}`) : undefined;
      const earlier = made ? space.messages.find((x) => x.name === made) : undefined;
      if (earlier) {
        const { via: _v, ...again } = earlier;
        return send(res, 200, again);
      }
      const option = replyOption(url.searchParams.get("messageReplyOption"));
      const named = input.thread?.name;
      const exists = named !== undefined && space.messages.some((x) => x.thread.name === named);
      if (option === "or_fail" && !exists) return apiError(res, 404, "NOT_FOUND", "Thread not found.");
      if (!withinQuota(space.name)) return exhaustedAnswer(res);
      const thread = option !== "none" && exists && named ? named : `${space.name}/threads/${id()}`;
      const created: FakeChatMessage = {
        name: `${space.name}/messages/${id()}`,
        sender: { name: APP_USER, type: "BOT" },
        text: input.text ?? "",
        thread: { name: thread },
        space: { name: space.name },
        createTime: new Date(now()).toISOString(),
        ...(input.cardsV2?.length ? { cardsV2: input.cardsV2 } : {}),
        via: "api",
      };
      space.messages.push(created);
      if (requestId) createdBy.set(`${space.name} ${requestId}`, created.name);
      const { via: _via, ...shown } = created;
      return send(res, 200, shown);
    }
    // spaces.messages.update (PUT, what the client library sends) and spaces.messages.patch (PATCH): the same rules.
    if (update) {
      const mask = (url.searchParams.get("updateMask") ?? "").split(",").filter(Boolean);
      if (mask.length === 0) return apiError(res, 400, "INVALID_ARGUMENT", "updateMask is required.");
      const space = spaces.get(update[1] ?? "");
      const message = space?.messages.find((x) => x.name === `${update[1]}/messages/${update[2]}`);
      if (!space || !message) return apiError(res, 404, "NOT_FOUND", "Requested entity was not found.");
      if (message.sender.name !== APP_USER) return apiError(res, 403, "PERMISSION_DENIED", "The caller does not have permission.");
      const input = JSON.parse(body.toString("utf8") || "{}") as { text?: string; cardsV2?: CardWithId[] };
      if ((input.text ?? "").length > MAX_TEXT) return apiError(res, 400, "INVALID_ARGUMENT", `Message text exceeds the maximum of ${MAX_TEXT} characters.`);
      if (!withinQuota(space.name)) return exhaustedAnswer(res);
      for (const field of mask) {
        if (field === "text") message.text = input.text ?? "";
        else if (field === "cards_v2" || field === "cardsV2") {
          if (input.cardsV2?.length) message.cardsV2 = input.cardsV2;
          else delete message.cardsV2;
        } else return apiError(res, 400, "INVALID_ARGUMENT", `Invalid field in updateMask: ${field}`);
      }
      const { via: _via, ...shown } = message;
      return send(res, 200, shown);
    }
    if (download) {
      const data = media.get(download[1] ?? "");
      if (!data) return apiError(res, 404, "NOT_FOUND", "Requested entity was not found.");
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(data.length) }).end(data);
      return;
    }
    if (req.method === "POST" && /^\/upload\/v1\/spaces\/[^/]+\/attachments:upload$/.test(path))
      return apiError(res, 403, "PERMISSION_DENIED", "This method requires user authentication.");
    if (/\/reactions$/.test(path)) return apiError(res, 403, "PERMISSION_DENIED", "This method requires user authentication.");
    return apiError(res, 404, "NOT_FOUND", `No such method: ${req.method} ${path}`);
  }

  const certPath = `/service_accounts/v1/metadata/x509/${CHAT}`;
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const body = await readBody(req);
      const path = decodeURIComponent(url.pathname);
      if (req.method === "GET" && path === certPath) return send(res, 200, { [chatKid]: CHAT_SIGNING_CERT }, { "cache-control": "public, max-age=20000" });
      if (req.method === "GET" && path === "/oauth2/v1/certs")
        return send(res, 200, { [oidcKid]: CHAT_SIGNING_CERT }, { "cache-control": "public, max-age=20000" });
      if (req.method === "POST" && path === "/token") return tokenEndpoint(body, res);
      await api(req, res, url, body);
      calls.push(`${req.method} ${path} ${res.statusCode}`);
    })().catch((error: unknown) => {
      if (!res.headersSent) apiError(res, 500, "INTERNAL", String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tokenUri = `${base}/token`;
  const serviceAccountKey = JSON.stringify({
    type: "service_account",
    project_id: "fake-project",
    private_key_id: "sa-key-1",
    private_key: account.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    client_email: accountEmail,
    client_id: "1234567890",
    token_uri: tokenUri,
  });

  return {
    url: base,
    certsUrl: options.audienceType === "project-number" ? `${base}${certPath}` : `${base}/oauth2/v1/certs`,
    tokenUri,
    serviceAccountKey,
    setEndpoint(url, aud) {
      endpoint = url;
      if (aud !== undefined) audience = aud;
      else if (options.audienceType === "app-url") audience = url;
    },
    say,
    tap,
    post,
    token,
    messages: (space) => [...(spaces.get(space)?.messages ?? [])],
    calls: () => [...calls],
    exhaust(n) {
      exhausted += n;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
