/**
 * Checks each enabled channel against its platform: Telegram's `getMe` and
 * Discord's `GET /users/@me` say whether the token is accepted (at the
 * channel's own apiRoot/api); a WhatsApp channel is linked when its auth
 * folder holds creds naming the paired account. Tokens never appear in
 * what is reported.
 */
import { join } from "node:path";
import { z } from "zod";
import type { ChannelConfig, DaemonConfig, DiscordChannelConfig, TelegramChannelConfig, WhatsAppChannelConfig } from "../config/schema.js";
import { probe, type CheckResult, type ProbeDeps } from "./result.js";

export interface ChannelCheckDeps extends ProbeDeps {
  /** Reads a file as UTF-8; rejects with an ErrnoException when it is missing. */
  readFile(path: string): Promise<string>;
}

const subjectOf = (c: ChannelConfig) => `channel ${c.id} (${c.type})`;

const TelegramMe = z.object({ ok: z.literal(true), result: z.object({ username: z.string().optional(), first_name: z.string() }) });
const TelegramError = z.object({ ok: z.literal(false), error_code: z.number().optional(), description: z.string().optional() });
const DiscordUser = z.object({ id: z.string(), username: z.string() });
/** Baileys' creds.json: `me` is set once a phone has paired. */
const WhatsAppCreds = z.looseObject({ me: z.looseObject({ id: z.string() }).optional() });

export async function checkChannels(config: DaemonConfig, deps: ChannelCheckDeps): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const channel of config.channels) {
    // The loader leaves disabled channels out; one built in code may still say so.
    if (!channel.enabled) continue;
    switch (channel.type) {
      case "terminal":
        results.push({ status: "ok", subject: subjectOf(channel), message: "nothing to check" });
        break;
      case "telegram":
        results.push(await checkTelegram(channel, deps));
        break;
      case "discord":
        results.push(await checkDiscord(channel, deps));
        break;
      case "whatsapp":
        results.push(await checkWhatsApp(channel, deps));
        break;
    }
  }
  return results;
}

async function checkTelegram(channel: TelegramChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = subjectOf(channel);
  const got = await probe(deps, `${channel.apiRoot}/bot${channel.token}/getMe`);
  if (got.kind === "unreachable") {
    return { status: "fail", subject, message: `cannot reach the Bot API at ${channel.apiRoot} (${got.reason})`, fix: "check the network, or the channel's apiRoot" };
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

async function checkDiscord(channel: DiscordChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = subjectOf(channel);
  const got = await probe(deps, `${channel.api}/v10/users/@me`, { headers: { authorization: `Bot ${channel.token}` } });
  if (got.kind === "unreachable") {
    return { status: "fail", subject, message: `cannot reach Discord at ${channel.api} (${got.reason})`, fix: "check the network, or the channel's api" };
  }
  const user = DiscordUser.safeParse(got.body);
  if (got.status === 200 && user.success) return { status: "ok", subject, message: `token accepted (bot ${user.data.username})` };
  if (got.status === 401) {
    return {
      status: "fail",
      subject,
      message: "Discord does not accept the token (401 Unauthorized)",
      fix: `put the bot token from the Developer Portal (Bot → Reset Token) in channel ${channel.id}'s token, without a "Bot " prefix`,
    };
  }
  return { status: "fail", subject, message: `GET /users/@me failed (HTTP ${got.status})`, fix: "try again later, or check the channel's api" };
}

async function checkWhatsApp(channel: WhatsAppChannelConfig, deps: ChannelCheckDeps): Promise<CheckResult> {
  const subject = subjectOf(channel);
  const authDir = channel.authDir ?? join("whatsapp", channel.id);
  const notLinked = (why: string): CheckResult => ({
    status: "fail",
    subject,
    message: `not linked to a phone (${why} in ${authDir})`,
    fix: "run `agent-bridge run --config ...` in a terminal and scan the QR code it prints with WhatsApp (Settings → Linked devices)",
  });
  let text: string;
  try {
    text = await deps.readFile(join(authDir, "creds.json"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? notLinked("no creds.json") : { status: "fail", subject, message: `cannot read ${join(authDir, "creds.json")} (${code ?? "read error"})`, fix: "check the folder's owner and permissions" };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return notLinked("creds.json is not valid JSON");
  }
  const creds = WhatsAppCreds.safeParse(raw);
  if (!creds.success || !creds.data.me) return notLinked("pairing was never completed");
  return { status: "ok", subject, message: "linked to a phone" };
}
