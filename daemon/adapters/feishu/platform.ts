/**
 * The Feishu/Lark platform's descriptor: channel schema (config.ts), secrets,
 * the `check` probe (a tenant access token for the App ID and Secret, then
 * `bot/v3/info` with it: the app has its bot) and a lazy adapter. Light on
 * purpose: the SDK loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { apiBaseOf, feishuChannelSchema, type FeishuChannelConfig } from "./config.js";

const TokenAnswer = z.looseObject({ code: z.number(), msg: z.string().optional(), tenant_access_token: z.string().optional() });
const BotAnswer = z.looseObject({
  code: z.number(),
  msg: z.string().optional(),
  bot: z.looseObject({ app_name: z.string().optional(), open_id: z.string() }).optional(),
});

async function checkFeishu(channel: FeishuChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const base = apiBaseOf(channel);
  const got = await probe(deps, `${base}/open-apis/auth/v3/tenant_access_token/internal`, {
    method: "POST",
    headers: { "content-type": "application/json; charset=utf-8" },
    body: JSON.stringify({ app_id: channel.app_id, app_secret: channel.app_secret }),
  });
  if (got.kind === "unreachable")
    return {
      status: "fail",
      subject,
      message: `cannot reach ${channel.domain === "lark" ? "Lark" : "Feishu"} at ${base} (${got.reason})`,
      fix: "check the network, or the channel's domain/api",
    };
  const token = TokenAnswer.safeParse(got.body);
  if (!token.success || token.data.code !== 0 || !token.data.tenant_access_token) {
    const code = token.success ? `code ${token.data.code}` : `HTTP ${got.status}`;
    return {
      status: "fail",
      subject,
      message: `Feishu does not give a tenant access token for this app (${code})`,
      fix: `put the app's App ID and App Secret (Credentials & Basic Info) in channel ${channel.id}'s app_id and app_secret, and check its domain ("feishu" or "lark")`,
    };
  }
  const bot = await probe(deps, `${base}/open-apis/bot/v3/info`, { headers: { authorization: `Bearer ${token.data.tenant_access_token}` } });
  if (bot.kind === "unreachable") return { status: "fail", subject, message: `bot/v3/info did not answer (${bot.reason})`, fix: "try again later" };
  const info = BotAnswer.safeParse(bot.body);
  if (!info.success || info.data.code !== 0 || !info.data.bot) {
    return {
      status: "fail",
      subject,
      message: `credentials accepted, but the app has no bot (${info.success ? `code ${info.data.code}` : `HTTP ${bot.status}`})`,
      fix: "turn on the Bot capability (Features → Bot) and publish a version of the app",
    };
  }
  const how =
    channel.mode === "http"
      ? `events: Feishu must post to this daemon's ${channel.http.path} (Events & Callbacks → Request URL)${channel.encrypt_key ? "" : "; no encrypt_key: events come unencrypted, checked by the verification token alone"}`
      : "events: the long connection (Events & Callbacks → Receive events through persistent connection)";
  return {
    status: channel.mode === "http" && !channel.encrypt_key ? "warn" : "ok",
    subject,
    message: `credentials accepted (bot ${info.data.bot.app_name ?? info.data.bot.open_id}); subscribe to im.message.receive_v1 (and card.action.trigger for buttons). ${how}`,
  };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@larksuiteoapi/node-sdk": "^1.74.0" };
const loadAdapter = () => loadAdapterModule({ type: "feishu", libraries }, () => import("./index.js"));

export const feishuPlatform = definePlatform({
  type: "feishu",
  name: "Feishu/Lark",
  libraries,
  secretHeaders: ["x-lark-signature"],
  schema: feishuChannelSchema,
  finalize: (channel, { id }): FeishuChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.app_secret, channel.encrypt_key, channel.verification_token].filter((s): s is string => s !== undefined),
  check: checkFeishu,
  load: loadAdapter,
  // Several machines, mode "http": every node's endpoint keeps events for the owner.
  receive: (channel, deps) =>
    channel.mode === "http" ? import("./receiver.js").then(({ startFeishuReceiver }) => startFeishuReceiver(channel, deps)) : undefined,
  async create(channel, deps) {
    const { createFeishuAdapter } = await loadAdapter();
    return createFeishuAdapter(channel, deps);
  },
});
