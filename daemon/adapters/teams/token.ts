/**
 * The bot's own token for the Bot Connector (client credentials against the
 * configured identity endpoint, scope `https://api.botframework.com/.default`),
 * cached until five minutes before it expires and then fetched again; callers
 * at the same moment share one request. A refusal of the credentials is
 * permanent (the operator must fix the app password); anything else passes.
 */
import { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import { SendError } from "../../vocabulary/adapter.js";

const TokenAnswer = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number().positive() });
const RENEW_BEFORE_MS = 5 * 60 * 1000;

export interface TokenSourceOptions {
  endpoint: string;
  appId: string;
  appPassword: string;
  scope: string;
  clock: Clock;
  fetchImpl?: typeof fetch;
}

export interface TokenSource {
  /** A token good for at least five more minutes. Rejects with a SendError. */
  token(): Promise<string>;
}

export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const fetchImpl = options.fetchImpl ?? fetch;
  let cached: { token: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;

  async function fetchToken(): Promise<string> {
    let response: Response;
    try {
      response = await fetchImpl(options.endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          client_id: options.appId,
          client_secret: options.appPassword,
          scope: options.scope,
        }).toString(),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new SendError(`the token endpoint did not answer (${error instanceof Error ? error.message : String(error)})`, { permanent: false });
    }
    const body: unknown = await response.json().catch(() => undefined);
    if (response.status === 400 || response.status === 401) {
      throw new SendError(`the token endpoint refused the app id and password (HTTP ${response.status})`, { permanent: true, status: response.status });
    }
    const answer = TokenAnswer.safeParse(body);
    if (!response.ok || !answer.success)
      throw new SendError(`the token endpoint failed (HTTP ${response.status})`, { permanent: false, status: response.status });
    cached = { token: answer.data.access_token, renewAt: options.clock.now() + answer.data.expires_in * 1000 - RENEW_BEFORE_MS };
    return answer.data.access_token;
  }

  return {
    token() {
      if (cached && options.clock.now() < cached.renewAt) return Promise.resolve(cached.token);
      pending ??= fetchToken().finally(() => {
        pending = undefined;
      });
      return pending;
    },
  };
}
