/**
 * The Microsoft Teams platform's descriptor: channel schema (config.ts),
 * secrets, the `check` probe (the app id and password tried against the token
 * endpoint, the OpenID metadata and its keys read; the anonymous mode warned
 * about) and a lazy adapter. Light on purpose: the Agents SDK loads only in
 * `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { ANONYMOUS_MODE, CONNECTOR_SCOPE, type TeamsChannelConfig, teamsChannelSchema, tokenEndpointOf } from "./config.js";

const TokenAnswer = z.object({ access_token: z.string().min(1) });
const TokenError = z.object({ error: z.string(), error_codes: z.array(z.number()).optional() });
const Metadata = z.looseObject({ jwks_uri: z.string() });
const KeySet = z.looseObject({ keys: z.array(z.unknown()).min(1) });

async function checkTeams(channel: TeamsChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const endpoint = `${channel.http.host}:${channel.http.port}${channel.http.path}`;
  if (channel.auth === ANONYMOUS_MODE) {
    return {
      status: "warn",
      subject,
      message: `anonymous mode: the endpoint ${endpoint} checks no token and sends none (for Microsoft's local Agents Playground only)`,
      fix: `remove "auth": "${ANONYMOUS_MODE}" and set app_password before Teams or anyone else can reach the endpoint`,
    };
  }
  const keys = await checkKeys(channel, deps);
  if (keys) return { ...keys, subject };
  const url = tokenEndpointOf(channel);
  const body = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: channel.app_id,
    client_secret: channel.app_password ?? "",
    scope: CONNECTOR_SCOPE,
  });
  const got = await probe(deps, url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: body.toString() });
  if (got.kind === "unreachable")
    return {
      status: "fail",
      subject,
      message: `cannot reach the token endpoint ${url} (${got.reason})`,
      fix: "check the network, or the channel's tokenEndpoint",
    };
  if (got.status === 200 && TokenAnswer.safeParse(got.body).success) {
    return {
      status: "ok",
      subject,
      message: `app ${channel.app_id} accepted by ${new URL(url).host}; signing keys read. Teams must post to this machine's ${endpoint} (Azure Bot → Configuration → Messaging endpoint, over HTTPS)`,
    };
  }
  const error = TokenError.safeParse(got.body);
  const code = error.success ? error.data.error : `HTTP ${got.status}`;
  return {
    status: "fail",
    subject,
    message: `the token endpoint does not accept the app id and password (${code})`,
    fix: `put a client secret of app ${channel.app_id} (Azure portal → App registrations → Certificates & secrets) in channel ${channel.id}'s app_password${channel.tenant_id ? ", and check tenant_id" : ", and set tenant_id for a single-tenant bot"}`,
  };
}

/** Whether the OpenID metadata and its keys can be read (every request's token is checked with them). Undefined when they can. */
async function checkKeys(channel: TeamsChannelConfig, deps: ProbeDeps): Promise<Omit<CheckResult, "subject"> | undefined> {
  const fix = "check the network, or the channel's openIdMetadata";
  const meta = await probe(deps, channel.openIdMetadata);
  const parsed = meta.kind === "answer" ? Metadata.safeParse(meta.body) : undefined;
  if (!parsed?.success) return { status: "fail", message: `cannot read the OpenID metadata at ${channel.openIdMetadata}`, fix };
  const keys = await probe(deps, parsed.data.jwks_uri);
  if (keys.kind !== "answer" || !KeySet.safeParse(keys.body).success)
    return { status: "fail", message: `cannot read the signing keys at ${parsed.data.jwks_uri}`, fix };
  return undefined;
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@microsoft/agents-hosting": "^1.8.1", "@microsoft/agents-activity": "^1.8.1" };
const loadAdapter = () => loadAdapterModule({ type: "teams", libraries }, () => import("./index.js"));

export const teamsPlatform = definePlatform({
  type: "teams",
  name: "Microsoft Teams",
  libraries,
  schema: teamsChannelSchema,
  finalize: (channel, { id }): TeamsChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.app_password].filter((s): s is string => s !== undefined),
  check: checkTeams,
  // A channel's reply chain by its conversation id, as its messages' `placeOf` reads it (a personal chat has none).
  async formerPlaceOf(place) {
    if (place.chatType !== "group") return undefined;
    const { conversationIdOf, placeOf } = await import("./inbound.js");
    return placeOf(conversationIdOf(place)).formerly;
  },
  load: loadAdapter,
  // Several machines: every node's endpoint verifies and keeps activities for the owner.
  receive: (channel, deps) => import("./receiver.js").then(({ startTeamsReceiver }) => startTeamsReceiver(channel, deps)),
  async create(channel, deps) {
    const { createTeamsAdapter } = await loadAdapter();
    return createTeamsAdapter(channel, deps);
  },
});
