/**
 * The LINE platform's descriptor: channel schema (config.ts), secrets, the
 * `check` probe (bot info with the channel access token, then the webhook
 * endpoint LINE has for the channel and the month's push quota) and a lazy
 * adapter: `@line/bot-sdk` loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { checkFiles } from "../file-links/config.js";
import { lineChannelSchema, type LineChannelConfig } from "./config.js";

const BotInfo = z.object({ userId: z.string(), displayName: z.string().optional(), basicId: z.string().optional() });
const WebhookEndpoint = z.object({ endpoint: z.string(), active: z.boolean() });
const Quota = z.object({ type: z.enum(["none", "limited"]), value: z.number().optional() });
const Consumption = z.object({ totalUsage: z.number() });

async function checkLine(channel: LineChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const headers = { authorization: `Bearer ${channel.channel_access_token}` };
  const got = await probe(deps, `${channel.api}/v2/bot/info`, { headers });
  if (got.kind === "unreachable") {
    return { status: "fail", subject, message: `cannot reach LINE at ${channel.api} (${got.reason})`, fix: "check the network, or the channel's api" };
  }
  const me = BotInfo.safeParse(got.body);
  if (got.status === 401) {
    return {
      status: "fail",
      subject,
      message: "LINE does not accept the channel access token (401)",
      fix: `issue a channel access token (LINE Developers Console → your channel → Messaging API) and put it in channel ${channel.id}'s channel_access_token`,
    };
  }
  if (got.status !== 200 || !me.success) return { status: "fail", subject, message: `bot info failed (HTTP ${got.status})`, fix: "try again later" };
  const who = `bot ${me.data.displayName ?? me.data.userId}${me.data.basicId ? ` (${me.data.basicId})` : ""}`;
  const notes: string[] = [];
  let warn = false;
  const hook = await probe(deps, `${channel.api}/v2/bot/channel/webhook/endpoint`, { headers });
  const endpoint = hook.kind === "answer" ? WebhookEndpoint.safeParse(hook.body) : undefined;
  if (endpoint?.success) {
    const path = new URL(endpoint.data.endpoint, "https://x").pathname;
    if (!endpoint.data.active) {
      warn = true;
      notes.push(`"Use webhook" is off for ${endpoint.data.endpoint}: turn it on in the Messaging API tab`);
    } else if (path !== channel.http.path) {
      warn = true;
      notes.push(`LINE posts to ${endpoint.data.endpoint}, whose path is not ${channel.http.path}`);
    } else notes.push(`LINE posts to ${endpoint.data.endpoint}`);
  } else notes.push("no webhook URL set for the channel yet");
  const quota = await probe(deps, `${channel.api}/v2/bot/message/quota`, { headers });
  const limit = quota.kind === "answer" ? Quota.safeParse(quota.body) : undefined;
  if (limit?.success && limit.data.type === "limited" && limit.data.value !== undefined) {
    const used = await probe(deps, `${channel.api}/v2/bot/message/quota/consumption`, { headers });
    const usage = used.kind === "answer" ? Consumption.safeParse(used.body) : undefined;
    if (usage?.success) {
      const left = limit.data.value - usage.data.totalUsage;
      notes.push(`push quota: ${left} of ${limit.data.value} left this month`);
      if (limit.data.value > 0 && left / limit.data.value < channel.quota_warning) warn = true;
    }
  }
  const files = await checkFiles(channel.file_links.public_base_url, deps);
  notes.push(files.note);
  if (files.warn) warn = true;
  return {
    status: warn ? "warn" : "ok",
    subject,
    message: `token accepted (${who}); ${notes.join("; ")}`,
    ...(files.warn ? { fix: files.fix } : {}),
  };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@line/bot-sdk": "^10.8.0" };
const loadAdapter = () => loadAdapterModule({ type: "line", libraries }, () => import("./index.js"));

export const linePlatform = definePlatform({
  type: "line",
  name: "LINE",
  libraries,
  schema: lineChannelSchema,
  secretHeaders: ["x-line-signature"],
  finalize: (channel, { id }): LineChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.channel_access_token, channel.channel_secret],
  check: checkLine,
  load: loadAdapter,
  // Several machines: every node's endpoint keeps events for the owner.
  receive: (channel, deps) => import("./receiver.js").then(({ startLineReceiver }) => startLineReceiver(channel, deps)),
  async create(channel, deps) {
    const { createLineAdapter } = await loadAdapter();
    return createLineAdapter(channel, deps);
  },
});
