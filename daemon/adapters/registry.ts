/**
 * Every chat platform the daemon knows, one line each. The config's channel
 * union (in this order), secret scrubbing, user ids, `agent-bridge check`,
 * buildAdapters and the shared adapter suite (test/daemon/adapters/) all
 * read this list; nothing else names a platform.
 */
import { discordPlatform } from "./discord/platform.js";
import { googleChatPlatform } from "./googlechat/platform.js";
import { slackPlatform } from "./slack/platform.js";
import { telegramPlatform } from "./telegram/platform.js";
import { teamsPlatform } from "./teams/platform.js";
import { linePlatform } from "./line/platform.js";
import { mattermostPlatform } from "./mattermost/platform.js";
import { terminalPlatform } from "./terminal/platform.js";
import { whatsappPlatform } from "./whatsapp/platform.js";
import { matrixPlatform } from "./matrix/platform.js";
import { signalPlatform } from "./signal/platform.js";
import { feishuPlatform } from "./feishu/platform.js";
import { nostrPlatform } from "./nostr/platform.js";

export const platforms = [
  terminalPlatform,
  telegramPlatform,
  discordPlatform,
  whatsappPlatform,
  slackPlatform,
  matrixPlatform,
  googleChatPlatform,
  signalPlatform,
  feishuPlatform,
  nostrPlatform,
  teamsPlatform,
  linePlatform,
  mattermostPlatform,
] as const;

export type RegisteredPlatform = (typeof platforms)[number];

/** HTTP headers any platform sends with a secret in them (redacted in logged requests). */
export const secretHeaders: readonly string[] = platforms.flatMap((p) => p.secretHeaders);
