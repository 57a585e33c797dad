/**
 * Validates the Bot Framework token on every request the Bot Connector makes
 * to the bot (learn.microsoft.com, "Authenticate requests from the Bot
 * Connector service to your bot"): a Bearer JWT, RS256, signed by a key the
 * configured OpenID metadata lists (and endorsed for the activity's channel
 * where the key says), issuer `https://api.botframework.com` (or the bot's own
 * tenant's, single-tenant), audience the bot's app id, within its validity
 * with five minutes' clock skew, and a `serviceUrl` claim equal to the
 * activity's (so no one can point the bot's replies, with its token, at a
 * server of their choosing). The checks are pure (`decodeJwt`, `checkClaims`,
 * `checkSignature`); only `OpenIdKeys` does I/O: the metadata and its keys,
 * cached, fetched again when a token names a key not seen (keys roll over),
 * at most once per `refreshFloorMs` so forged key ids cannot make it hammer
 * the metadata.
 */
import { createPublicKey, createVerify, type JsonWebKey as NodeJwk } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";

export const BOT_FRAMEWORK_ISSUER = "https://api.botframework.com";
/** The skew the Bot Framework's docs call industry standard. */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;

const JwtHeader = z.object({ alg: z.string(), kid: z.string().optional(), typ: z.string().optional() });
const JwtClaims = z.object({
  iss: z.string().optional(),
  aud: z.union([z.string(), z.array(z.string())]).optional(),
  exp: z.number().optional(),
  nbf: z.number().optional(),
  tid: z.string().optional(),
  serviceurl: z.string().optional(),
  serviceUrl: z.string().optional(),
});
export type JwtClaimSet = z.output<typeof JwtClaims>;

export interface DecodedJwt {
  header: z.output<typeof JwtHeader>;
  claims: JwtClaimSet;
  signingInput: string;
  signature: Buffer;
}

export type Verdict<T> = { ok: true; value: T } | { ok: false; reason: string };

/** The token of an `Authorization: Bearer ...` header, decoded (not yet trusted). */
export function decodeJwt(authorization: string | undefined): Verdict<DecodedJwt> {
  if (!authorization) return { ok: false, reason: "no Authorization header" };
  const match = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(authorization.trim());
  if (!match) return { ok: false, reason: "Authorization is not a Bearer JWT" };
  const [, h = "", p = "", s = ""] = match;
  const header = JwtHeader.safeParse(parseSegment(h));
  const claims = JwtClaims.safeParse(parseSegment(p));
  if (!header.success || !claims.success) return { ok: false, reason: "the token's header or claims are not JSON objects" };
  return { ok: true, value: { header: header.data, claims: claims.data, signingInput: `${h}.${p}`, signature: Buffer.from(s, "base64url") } };
}

export interface ClaimRules {
  appId: string;
  /** Single-tenant: the tenant whose tokens are also taken (its issuers, its `tid`). */
  tenantId?: string | undefined;
  /** The activity's `serviceUrl`, which the token's claim must equal. */
  serviceUrl: string | undefined;
  nowMs: number;
}

/** Issuer, audience, validity and service URL; the signature is `checkSignature`'s. */
export function checkClaims(claims: JwtClaimSet, rules: ClaimRules): Verdict<JwtClaimSet> {
  const issuers = [BOT_FRAMEWORK_ISSUER];
  if (rules.tenantId) issuers.push(`https://sts.windows.net/${rules.tenantId}/`, `https://login.microsoftonline.com/${rules.tenantId}/v2.0`);
  if (!claims.iss || !issuers.includes(claims.iss)) return { ok: false, reason: "wrong issuer" };
  const audiences = Array.isArray(claims.aud) ? claims.aud : claims.aud === undefined ? [] : [claims.aud];
  if (!audiences.includes(rules.appId)) return { ok: false, reason: "wrong audience (not this bot's app id)" };
  if (claims.exp === undefined) return { ok: false, reason: "no expiry" };
  if (claims.exp * 1000 + CLOCK_SKEW_MS < rules.nowMs) return { ok: false, reason: "expired" };
  if (claims.nbf !== undefined && claims.nbf * 1000 - CLOCK_SKEW_MS > rules.nowMs) return { ok: false, reason: "not valid yet" };
  if (rules.tenantId && claims.tid !== undefined && claims.tid !== rules.tenantId) return { ok: false, reason: "wrong tenant" };
  const serviceUrl = claims.serviceurl ?? claims.serviceUrl;
  if (serviceUrl !== undefined && rules.serviceUrl !== undefined && trimSlash(serviceUrl) !== trimSlash(rules.serviceUrl)) {
    return { ok: false, reason: "the token's serviceUrl is not the activity's" };
  }
  // Whatever the issuer: the reply goes to the activity's serviceUrl with the bot's own token, so a token that
  // does not vouch for it would let anyone with a token for this app id aim that reply (SSRF).
  if (serviceUrl === undefined && (claims.iss === BOT_FRAMEWORK_ISSUER || rules.serviceUrl !== undefined)) {
    return { ok: false, reason: "no serviceUrl claim" };
  }
  return { ok: true, value: claims };
}

/** A key of the metadata's key set. */
export const SigningKey = z.looseObject({
  kty: z.string(),
  kid: z.string().optional(),
  n: z.string().optional(),
  e: z.string().optional(),
  endorsements: z.array(z.string()).optional(),
});
export type SigningKey = z.output<typeof SigningKey>;

/** RS256 over the token's first two parts with `key`; the key's endorsements must name `channelId` where it has any. */
export function checkSignature(token: DecodedJwt, key: SigningKey, channelId: string | undefined): Verdict<true> {
  if (token.header.alg !== "RS256") return { ok: false, reason: `algorithm ${token.header.alg} is not RS256` };
  if (key.kty !== "RSA" || !key.n || !key.e) return { ok: false, reason: "the signing key is not an RSA key" };
  if (key.endorsements && channelId !== undefined && !key.endorsements.includes(channelId)) {
    return { ok: false, reason: `the signing key is not endorsed for channel ${channelId}` };
  }
  const jwk: NodeJwk = { kty: "RSA", n: key.n, e: key.e };
  const verifier = createVerify("RSA-SHA256");
  verifier.update(token.signingInput);
  const good = verifier.verify(createPublicKey({ key: jwk, format: "jwk" }), token.signature);
  return good ? { ok: true, value: true } : { ok: false, reason: "bad signature" };
}

const Metadata = z.looseObject({ jwks_uri: z.string().url() });
const KeySet = z.looseObject({ keys: z.array(z.unknown()) });

/** Reads a URL's JSON; rejects when no 2xx came. */
export type FetchJson = (url: string) => Promise<unknown>;

export const fetchJson: FetchJson = async (url) => {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return (await response.json()) as unknown;
};

export interface OpenIdKeysOptions {
  metadataUrl: string;
  fetchJson: FetchJson;
  clock: Clock;
  /** How long fetched keys serve before the next request fetches them again. Default 24 h (the docs: at least daily). */
  maxAgeMs?: number;
  /** Least time between two fetches for an unknown key id. Default 60 s. */
  refreshFloorMs?: number;
}

/** The keys the OpenID metadata publishes, cached; fetched again when stale or when a token names one not seen. */
export class OpenIdKeys {
  readonly #options: OpenIdKeysOptions;
  #keys: SigningKey[] = [];
  #fetchedAt = Number.NEGATIVE_INFINITY;
  /** The fetch under way (concurrent requests share it). */
  #pending: Promise<void> | null = null;

  constructor(options: OpenIdKeysOptions) {
    this.#options = options;
  }

  /** The key `kid` names; undefined when the metadata does not list it even after a fresh fetch. Rejects when the metadata cannot be read. */
  async find(kid: string | undefined): Promise<SigningKey | undefined> {
    const now = this.#options.clock.now();
    const stale = now - this.#fetchedAt > (this.#options.maxAgeMs ?? 24 * 60 * 60 * 1000);
    if (stale) await this.#refresh();
    let key = this.#pick(kid);
    if (!key && !stale && this.#options.clock.now() - this.#fetchedAt >= (this.#options.refreshFloorMs ?? 60_000)) {
      await this.#refresh();
      key = this.#pick(kid);
    }
    return key;
  }

  #pick(kid: string | undefined): SigningKey | undefined {
    return kid === undefined ? undefined : this.#keys.find((k) => k.kid === kid);
  }

  #refresh(): Promise<void> {
    this.#pending ??= this.#load().finally(() => {
      this.#pending = null;
    });
    return this.#pending;
  }

  async #load(): Promise<void> {
    const metadata = Metadata.parse(await this.#options.fetchJson(this.#options.metadataUrl));
    const set = KeySet.parse(await this.#options.fetchJson(metadata.jwks_uri));
    this.#keys = set.keys.flatMap((k) => {
      const key = SigningKey.safeParse(k);
      return key.success ? [key.data] : [];
    });
    this.#fetchedAt = this.#options.clock.now();
  }
}

export interface RequestFacts {
  authorization: string | undefined;
  /** The activity's, as it came (not yet trusted). */
  serviceUrl: string | undefined;
  channelId: string | undefined;
}

/** Every check on one request's token: the claims it proves, or why it is refused. */
export async function verifyBotToken(request: RequestFacts, keys: OpenIdKeys, rules: Omit<ClaimRules, "serviceUrl">): Promise<Verdict<JwtClaimSet>> {
  const decoded = decodeJwt(request.authorization);
  if (!decoded.ok) return decoded;
  const claims = checkClaims(decoded.value.claims, { ...rules, serviceUrl: request.serviceUrl });
  if (!claims.ok) return claims;
  let key: SigningKey | undefined;
  try {
    key = await keys.find(decoded.value.header.kid);
  } catch (error) {
    return { ok: false, reason: `the signing keys could not be read (${error instanceof Error ? error.message : String(error)})` };
  }
  if (!key) return { ok: false, reason: "signed with a key the OpenID metadata does not list" };
  const signature = checkSignature(decoded.value, key, request.channelId);
  return signature.ok ? claims : signature;
}

function parseSegment(segment: string): unknown {
  try {
    return JSON.parse(Buffer.from(segment, "base64url").toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

const trimSlash = (url: string): string => url.replace(/\/+$/, "");
