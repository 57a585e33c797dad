/**
 * The Telegram platform's descriptor: channel schema, secrets, the `check`
 * probe (Bot API `getMe` at the channel's own apiRoot) and a lazy adapter.
 * Light on purpose: grammY loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { telegramChannelSchema, type TelegramChannelConfig } from "./config.js";

const TelegramMe = z.object({ ok: z.literal(true), result: z.object({ username: z.string().optional(), first_name: z.string() }) });
const TelegramError = z.object({ ok: z.literal(false), error_code: z.number().optional(), description: z.string().optional() });

async function checkTelegram(channel: TelegramChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const got = await probe(deps, `${channel.apiRoot}/bot${channel.token}/getMe`);
  if (got.kind === "unreachable") {
    return {
      status: "fail",
      subject,
      message: `cannot reach the Bot API at ${channel.apiRoot} (${got.reason})`,
      fix: "check the network, or the channel's apiRoot",
    };
  }
  const me = TelegramMe.safeParse(got.body);
  if (got.status === 200 && me.success) {
    return { status: "ok", subject, message: `token accepted (bot ${me.data.result.username ? `@${me.data.result.username}` : me.data.result.first_name})` };
  }
  const error = TelegramError.safeParse(got.body);
  const said = error.success && error.data.description ? ` "${error.data.description}"` : "";
  if (got.status === 401 || got.status === 404) {
    return {
      status: "fail",
      subject,
      message: `Telegram does not accept the token (${got.status}${said})`,
      fix: `put the token @BotFather gave you in channel ${channel.id}'s token (or the variable it names); /token in @BotFather shows it again`,
    };
  }
  return { status: "fail", subject, message: `getMe failed (HTTP ${got.status}${said})`, fix: "try again later, or check the channel's apiRoot" };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { grammy: "^1.46.0" };
const loadAdapter = () => loadAdapterModule({ type: "telegram", libraries }, () => import("./index.js"));

export const telegramPlatform = definePlatform({
  type: "telegram",
  name: "Telegram",
  libraries,
  // A webhook's secret comes in this header.
  secretHeaders: ["x-telegram-bot-api-secret-token"],
  schema: telegramChannelSchema,
  finalize: (channel, { id }): TelegramChannelConfig => ({ ...channel, id }),
  secrets: (channel) => (channel.webhook ? [channel.token, channel.webhook.secretToken] : [channel.token]),
  check: checkTelegram,
  load: loadAdapter,
  async create(channel, deps) {
    const { createTelegramAdapter } = await loadAdapter();
    return createTelegramAdapter(channel, deps);
  },
});
