/**
 * The Slack platform's descriptor: channel schema (config.ts), secrets, the
 * `check` probe (auth.test at the channel's own api, then the bot's scopes,
 * from the `x-oauth-scopes` header Slack sends with every answer, against
 * what the config needs; in Socket Mode also the app token) and a lazy adapter. Light on purpose: the Slack SDK
 * loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { missingScopes, scopesNeeded, slackChannelSchema, type SlackChannelConfig } from "./config.js";

const AuthTest = z.object({ ok: z.literal(true), user: z.string().optional(), team: z.string().optional(), user_id: z.string() });
const SlackError = z.object({ ok: z.literal(false), error: z.string() });

async function checkSlack(channel: SlackChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const got = await probe(deps, `${channel.api}/auth.test`, { method: "POST", headers: { authorization: `Bearer ${channel.botToken}` } });
  if (got.kind === "unreachable") {
    return { status: "fail", subject, message: `cannot reach Slack at ${channel.api} (${got.reason})`, fix: "check the network, or the channel's api" };
  }
  const me = AuthTest.safeParse(got.body);
  if (got.status !== 200 || !me.success) {
    const error = SlackError.safeParse(got.body);
    const code = error.success ? error.data.error : `HTTP ${got.status}`;
    const refused = ["invalid_auth", "not_authed", "account_inactive", "token_revoked", "not_allowed_token_type"].includes(code);
    return refused
      ? {
          status: "fail",
          subject,
          message: `Slack does not accept the bot token (${code})`,
          fix: `put the Bot User OAuth Token (OAuth & Permissions, xoxb-...) in channel ${channel.id}'s botToken`,
        }
      : { status: "fail", subject, message: `auth.test failed (${code})`, fix: "try again later, or check the channel's api" };
  }
  const who = `bot ${me.data.user ?? me.data.user_id}${me.data.team ? ` in ${me.data.team}` : ""}`;
  if (channel.mode === "socket" && channel.appToken) {
    const refused = await checkAppToken(channel, channel.appToken, deps);
    if (refused) return { ...refused, subject };
  }
  const granted = got.headers["x-oauth-scopes"];
  if (granted === undefined) return { status: "warn", subject, message: `token accepted (${who}); Slack did not say the token's scopes` };
  const missing = missingScopes(
    scopesNeeded(channel),
    granted.split(",").map((s) => s.trim()),
  );
  const required = missing.filter((m) => m.required);
  const events =
    "events (Event Subscriptions or Socket Mode) cannot be read with a bot token: subscribe to message.im and app_mention (and message.channels for thread follow-ups)";
  if (missing.length === 0) return { status: "ok", subject, message: `token accepted (${who}); scopes cover the config. ${events}` };
  const list = missing.map((m) => `${m.scope} (${m.why})`).join(", ");
  return {
    status: required.length > 0 ? "fail" : "warn",
    subject,
    message: `token accepted (${who}) but missing scopes: ${list}`,
    fix: `add ${missing.map((m) => m.scope).join(", ")} under OAuth & Permissions → Bot Token Scopes, then reinstall the app to the workspace`,
  };
}

/**
 * Socket Mode: whether Slack accepts the app token (apps.connections.open; the
 * URL it hands out expires unused). Undefined when it does; else the failure.
 */
async function checkAppToken(channel: SlackChannelConfig, appToken: string, deps: ProbeDeps): Promise<Omit<CheckResult, "subject"> | undefined> {
  const got = await probe(deps, `${channel.api}/apps.connections.open`, { method: "POST", headers: { authorization: `Bearer ${appToken}` } });
  if (got.kind === "unreachable")
    return { status: "fail", message: `cannot reach Slack at ${channel.api} (${got.reason})`, fix: "check the network, or the channel's api" };
  const error = SlackError.safeParse(got.body);
  if (got.status === 200 && !error.success) return undefined;
  const code = error.success ? error.data.error : `HTTP ${got.status}`;
  return {
    status: "fail",
    message: `Slack does not accept the app token for Socket Mode (${code})`,
    fix: `put an app-level token with connections:write (Basic Information → App-Level Tokens, xapp-...) in channel ${channel.id}'s appToken, and turn Socket Mode on`,
  };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@slack/web-api": "^8.2.0", "@slack/socket-mode": "^3.1.0" };
const loadAdapter = () => loadAdapterModule({ type: "slack", libraries }, () => import("./index.js"));

export const slackPlatform = definePlatform({
  type: "slack",
  name: "Slack",
  libraries,
  schema: slackChannelSchema,
  finalize: (channel, { id }): SlackChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.botToken, channel.appToken, channel.signingSecret].filter((s): s is string => s !== undefined),
  check: checkSlack,
  // A thread named by its root's ts, as its replies' `threadOf` names it (a channel's top level kept its name).
  async formerPlaceOf({ chatId, chatType, threadId }) {
    if (threadId === undefined) return undefined;
    const { threadOf } = await import("./inbound.js");
    return threadOf(chatId, chatType === "direct", threadId, threadId).formerly;
  },
  load: loadAdapter,
  // Several machines, HTTP Events API: every node's endpoint keeps events for the owner.
  receive: (channel, deps) =>
    channel.mode === "http" ? import("./receiver.js").then(({ startSlackReceiver }) => startSlackReceiver(channel, deps)) : undefined,
  async create(channel, deps) {
    const { createSlackAdapter } = await loadAdapter();
    return createSlackAdapter(channel, deps);
  },
});
