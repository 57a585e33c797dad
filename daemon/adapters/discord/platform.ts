/**
 * The Discord platform's descriptor: channel schema (config.ts), secrets, the `check`
 * probe (`GET /users/@me` at the channel's own api) and a lazy adapter.
 * Light on purpose: discord.js loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { discordChannelSchema, type DiscordChannelConfig } from "./config.js";

const DiscordUser = z.object({ id: z.string(), username: z.string() });

async function checkDiscord(channel: DiscordChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
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

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "discord.js": "^14.28.1" };
const loadAdapter = () => loadAdapterModule({ type: "discord", libraries }, () => import("./index.js"));

export const discordPlatform = definePlatform({
  type: "discord",
  name: "Discord",
  libraries,
  schema: discordChannelSchema,
  finalize: (channel, { id }): DiscordChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.token],
  // A thread is a channel of its own (its parent the chat), only in a guild: its messages' `placeOf`, from the ids alone.
  async formerPlaceOf({ chatId, chatType, threadId }) {
    if (threadId === undefined || chatType !== "group") return undefined;
    const { placeOf } = await import("./inbound.js");
    return placeOf({ channelId: threadId, parentChannelId: chatId, guildId: null }).formerly;
  },
  check: checkDiscord,
  load: loadAdapter,
  async create(channel, deps) {
    const { createDiscordAdapter } = await loadAdapter();
    return createDiscordAdapter(channel, deps);
  },
});
