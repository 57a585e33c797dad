/**
 * The service account the app answers as: its JSON key from the config (a
 * file, or the key itself from the environment), parsed; never logged, and
 * what is wrong with a bad one is said without any of its content. Light
 * (zod and node:crypto only): `agent-bridge check` uses it to ask the key's
 * token endpoint for a token, the adapter to build its client (credentials.ts).
 */
import { createSign } from "node:crypto";
import { z } from "zod";
import type { GoogleChatChannelConfig } from "./config.js";

/** Google's token endpoint: what a key names as `token_uri`, and what `google-auth-library` posts to. */
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";
/** App authentication: the Chat API's scope for an app acting as itself. */
export const CHAT_BOT_SCOPE = "https://www.googleapis.com/auth/chat.bot";

export const ServiceAccountKey = z.object({
  type: z.literal("service_account", { error: 'must be "service_account"' }),
  client_email: z.string().min(3),
  private_key: z.string().includes("PRIVATE KEY", { error: "is not a PEM private key" }),
  private_key_id: z.string().optional(),
  project_id: z.string().optional(),
  token_uri: z.url().default(GOOGLE_TOKEN_URL),
});
export type ServiceAccountKey = z.output<typeof ServiceAccountKey>;

/** The key's text: the config's own (from the environment), or the file's through `read`. */
export async function readKeyText(
  config: Pick<GoogleChatChannelConfig, "serviceAccountKey" | "serviceAccountKeyFile">,
  read: (path: string) => Promise<string>,
): Promise<string> {
  if (config.serviceAccountKey !== undefined) return config.serviceAccountKey;
  if (config.serviceAccountKeyFile === undefined) throw new Error("the channel names no service account key");
  return read(config.serviceAccountKeyFile);
}

/** The key, or what is wrong with it (never any of its content). */
export function parseKey(text: string): { ok: true; key: ServiceAccountKey } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: "the service account key is not JSON" };
  }
  const parsed = ServiceAccountKey.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: `the service account key is not usable: ${issue ? `${issue.path.join(".") || "key"} ${issue.message}` : "malformed"}` };
  }
  return { ok: true, key: parsed.data };
}

/** The signed JWT a service account trades for an access token (RFC 7523), as Google documents it. */
export function signAssertion(key: ServiceAccountKey, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000);
  const header = { alg: "RS256", typ: "JWT", ...(key.private_key_id ? { kid: key.private_key_id } : {}) };
  // Its audience is Google's token URL, wherever the key says to post it (as google-auth-library signs it).
  const claims = { iss: key.client_email, scope: CHAT_BOT_SCOPE, aud: GOOGLE_TOKEN_URL, iat, exp: iat + 3600 };
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${part(header)}.${part(claims)}`;
  const signature = createSign("RSA-SHA256").update(unsigned).sign(key.private_key).toString("base64url");
  return `${unsigned}.${signature}`;
}
