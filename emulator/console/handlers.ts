/**
 * The console's read routes (`/_emulator/console/...`), registered against the
 * route table like every other route: access, query validation (422) and the
 * OpenAPI document come from `shared/api.ts`.
 */
import { RequestIdParam } from "../../shared/schemas/console.js";
import type { EmulatorEnv } from "../env.js";
import { notFound, validationError } from "../errors.js";
import { requestDetail } from "../events/capture.js";
import type { RequestLog } from "../events/request-log.js";
import type { Handlers } from "../http/router.js";
import { channels, overview, responseChain, sessions, sessionTurns } from "./data.js";

type ConsoleHandlers = Pick<
  Handlers,
  "consoleState" | "consoleSessions" | "consoleSessionTurns" | "consoleChannels" | "consoleResponseChain" | "consoleRequests" | "consoleRequest"
>;

export function consoleHandlers(env: EmulatorEnv, requests: RequestLog): ConsoleHandlers {
  // What the console shows is live: never from a cache.
  const fresh = <T>(res: { set(name: string, value: string): unknown }, value: T): T => {
    res.set("cache-control", "no-store");
    return value;
  };
  return {
    consoleState: ({ res }) => fresh(res, overview(env)),
    consoleSessions: ({ params, res }) => fresh(res, sessions(env, params.instance_id)),
    consoleSessionTurns: ({ params, query, res }) => fresh(res, sessionTurns(env, params.instance_id, params.session_id, query.limit)),
    consoleChannels: async ({ params, res }) => fresh(res, await channels(env, params.instance_id)),
    consoleResponseChain: ({ params, query, res }) => fresh(res, responseChain(env, params.response_id, query.limit)),
    consoleRequests: ({ res }) => fresh(res, requests.list()),
    consoleRequest: ({ params, res }) => {
      const parsed = RequestIdParam.safeParse(params);
      if (!parsed.success) throw validationError("path", parsed.error);
      const found = requestDetail(requests, parsed.data.request_id);
      if (!found) throw notFound(`Request ${parsed.data.request_id} is no longer in the log.`);
      return fresh(res, found);
    },
  };
}
