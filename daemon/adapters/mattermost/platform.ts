/**
 * The Mattermost platform's descriptor: channel schema (config.ts), secrets,
 * the `check` probe (`GET /api/v4/users/me` with the bot's token) and a lazy
 * adapter. Light on purpose: @mattermost/client loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { mattermostChannelSchema, type MattermostChannelConfig } from "./config.js";

const MattermostUser = z.object({ id: z.string(), username: z.string(), is_bot: z.boolean().optional() });

async function checkMattermost(channel: MattermostChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const got = await probe(deps, `${channel.base_url}/api/v4/users/me`, { headers: { authorization: `Bearer ${channel.bot_token}` } });
  if (got.kind === "unreachable") {
    return {
      status: "fail",
      subject,
      message: `cannot reach Mattermost at ${channel.base_url} (${got.reason})`,
      fix: "check the network, or the channel's base_url",
    };
  }
  const user = MattermostUser.safeParse(got.body);
  if (got.status === 200 && user.success) {
    const note = user.data.is_bot === false ? " (a person's account, not a bot account)" : "";
    return { status: "ok", subject, message: `token accepted (@${user.data.username}${note})` };
  }
  if (got.status === 401) {
    return {
      status: "fail",
      subject,
      message: "Mattermost does not accept the token (401 Unauthorized)",
      fix: `put the bot account's access token (System Console → Integrations → Bot Accounts) in channel ${channel.id}'s bot_token`,
    };
  }
  if (got.status === 404) {
    return {
      status: "fail",
      subject,
      message: "no Mattermost API at base_url (404 on /api/v4/users/me)",
      fix: "set base_url to the server's address, without /api/v4",
    };
  }
  return { status: "fail", subject, message: `GET /api/v4/users/me failed (HTTP ${got.status})`, fix: "try again later, or check the channel's base_url" };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@mattermost/client": "^11.9.0" };
const loadAdapter = () => loadAdapterModule({ type: "mattermost", libraries }, () => import("./index.js"));

export const mattermostPlatform = definePlatform({
  type: "mattermost",
  name: "Mattermost",
  libraries,
  schema: mattermostChannelSchema,
  finalize: (channel, { id }): MattermostChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.bot_token],
  check: checkMattermost,
  load: loadAdapter,
  async create(channel, deps) {
    const { createMattermostAdapter } = await loadAdapter();
    return createMattermostAdapter(channel, deps);
  },
});
