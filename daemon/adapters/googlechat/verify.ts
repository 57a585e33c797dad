/**
 * Every request Chat posts carries a bearer token Google signed
 * (developers.google.com/workspace/chat/verify-requests-from-chat); one that
 * does not verify is answered 401 and nothing of it is read further. Two
 * kinds, by the app's authentication audience:
 * - project number: a JWT issued by chat@system.gserviceaccount.com, its
 *   audience the project number, signed with a key from Chat's x509
 *   certificates;
 * - endpoint URL: a Google OIDC ID token (issuer accounts.google.com), its
 *   audience the endpoint URL, its `email` chat@system.gserviceaccount.com
 *   (verified), signed with a key from Google's OAuth2 certificates.
 * The signature, `iat`/`exp` (with the library's five-minute skew), issuer and
 * audience are checked by `google-auth-library`'s `verifySignedJwtWithCertsAsync`.
 * The certificates are fetched from the configured URL and kept for as long as
 * its Cache-Control says; a token naming a key not in them fetches them again,
 * at most once a minute (Google rotates keys; a forger must not make us fetch).
 * When the URL does not answer, the certificates kept go on being used.
 */
import { OAuth2Client } from "google-auth-library";
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import { CHAT_ISSUER, GOOGLE_OIDC_ISSUERS } from "./config.js";

/** Key id to PEM certificate, as both certificate URLs publish them. */
const Certs = z.record(z.string(), z.string().includes("BEGIN"));
type Certs = z.output<typeof Certs>;

/** Least time between two fetches for an unknown key id. */
const REFRESH_FLOOR_MS = 60_000;
/** Kept this long when the answer names no max-age. */
const DEFAULT_MAX_AGE_MS = 60 * 60 * 1000;

export interface CertSource {
  /** The certificates; `refresh` asks for a fresh copy (honoured at most once a minute). */
  certs(options?: { refresh?: boolean }): Promise<Certs>;
}

export function createCertCache(url: string, clock: Clock, fetchImpl: typeof fetch = fetch): CertSource {
  let kept: { certs: Certs; until: number; fetchedAt: number } | undefined;
  let inFlight: Promise<Certs> | undefined;
  const load = async (): Promise<Certs> => {
    const response = await fetchImpl(url, { signal: AbortSignal.timeout(15_000) });
    if (!response.ok) throw new Error(`certificates answered HTTP ${response.status}`);
    const certs = Certs.parse(await response.json());
    const maxAge = /max-age=(\d+)/.exec(response.headers.get("cache-control") ?? "")?.[1];
    const now = clock.now();
    kept = { certs, fetchedAt: now, until: now + (maxAge === undefined ? DEFAULT_MAX_AGE_MS : Number(maxAge) * 1000) };
    return certs;
  };
  return {
    certs({ refresh = false } = {}) {
      const now = clock.now();
      const fresh = kept && now < kept.until && !(refresh && now - kept.fetchedAt >= REFRESH_FLOOR_MS);
      if (kept && fresh) return Promise.resolve(kept.certs);
      inFlight ??= load()
        .catch((error: unknown) => {
          // Google's keys overlap for days when they rotate: the ones kept still verify while
          // the URL does not answer, and it is asked again a minute later, not on every request.
          if (!kept) throw error;
          kept = { ...kept, until: clock.now() + REFRESH_FLOOR_MS, fetchedAt: clock.now() };
          return kept.certs;
        })
        .finally(() => {
          inFlight = undefined;
        });
      return inFlight;
    },
  };
}

export interface VerifyOptions {
  audienceType: "project-number" | "app-url";
  audience: string;
  certs: CertSource;
}

/** Why a request was refused, as one fixed phrase (never the token, which the library's messages quote). */
export type Refusal =
  | "no bearer token"
  | "malformed token"
  | "unknown signing key"
  | "bad signature"
  | "expired or not yet valid"
  | "wrong issuer"
  | "wrong audience"
  | "not sent by Chat"
  | "certificates unavailable";

const verifier = new OAuth2Client();

/** Whether `authorization` (the header as it came) carries a token Chat signed for this app. */
export async function verifyChatRequest(authorization: string | undefined, options: VerifyOptions): Promise<{ ok: true } | { ok: false; reason: Refusal }> {
  const token = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization ?? "")?.[1];
  if (!token) return { ok: false, reason: authorization ? "malformed token" : "no bearer token" };
  const kid = keyIdOf(token);
  if (kid === undefined) return { ok: false, reason: "malformed token" };
  let certs: Certs;
  try {
    certs = await options.certs.certs();
    if (!(kid in certs)) certs = await options.certs.certs({ refresh: true });
  } catch {
    return { ok: false, reason: "certificates unavailable" };
  }
  if (!(kid in certs)) return { ok: false, reason: "unknown signing key" };
  const issuers = options.audienceType === "project-number" ? [CHAT_ISSUER] : [...GOOGLE_OIDC_ISSUERS];
  try {
    const ticket = await verifier.verifySignedJwtWithCertsAsync(token, certs, options.audience, issuers);
    if (options.audienceType === "app-url") {
      const payload = ticket.getPayload();
      if (payload?.email !== CHAT_ISSUER || payload.email_verified !== true) return { ok: false, reason: "not sent by Chat" };
    }
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: refusalOf(error instanceof Error ? error.message : "") };
  }
}

function keyIdOf(token: string): string | undefined {
  try {
    const header: unknown = JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString("utf8"));
    const kid = header && typeof header === "object" && "kid" in header ? header.kid : undefined;
    return typeof kid === "string" ? kid : undefined;
  } catch {
    return undefined;
  }
}

/** The library says why in words (quoting the token): only the kind is kept. */
function refusalOf(message: string): Refusal {
  if (message.startsWith("Invalid token signature")) return "bad signature";
  if (/^Token used too (early|late)|^Expiration time too far|^No (issue|expiration) time|field using invalid format/.test(message))
    return "expired or not yet valid";
  if (message.startsWith("Invalid issuer")) return "wrong issuer";
  if (message.startsWith("Wrong recipient")) return "wrong audience";
  if (message.startsWith("No pem found")) return "unknown signing key";
  return "malformed token";
}
