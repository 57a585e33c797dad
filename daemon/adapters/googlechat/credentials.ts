/**
 * The service account's client: `google-auth-library`'s JWT client signs the
 * assertion and keeps the access token. It posts the assertion to Google's
 * token URL, written into the library (gtoken/getToken.js), so a key whose own
 * `token_uri` names another token endpoint (a test's fake, a private Google
 * endpoint) has that one request sent there instead.
 */
import { JWT } from "google-auth-library";
import { CHAT_BOT_SCOPE, GOOGLE_TOKEN_URL, type ServiceAccountKey } from "./key.js";

export function serviceAccountClient(key: ServiceAccountKey): JWT {
  const client = new JWT({
    email: key.client_email,
    key: key.private_key,
    ...(key.private_key_id ? { keyId: key.private_key_id } : {}),
    scopes: [CHAT_BOT_SCOPE],
  });
  if (key.token_uri !== GOOGLE_TOKEN_URL) {
    client.transporter.interceptors.request.add({
      resolved: async (options) => {
        if (String(options.url) === GOOGLE_TOKEN_URL) options.url = new URL(key.token_uri);
        return options;
      },
    });
  }
  return client;
}
