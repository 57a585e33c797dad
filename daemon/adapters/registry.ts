/**
 * Every chat platform the daemon knows, one line each. The config's channel
 * union (in this order), secret scrubbing, `agent-bridge check` and
 * buildAdapters all read this list; nothing else names a platform.
 */
import { discordPlatform } from "./discord/platform.js";
import { slackPlatform } from "./slack/platform.js";
import { telegramPlatform } from "./telegram/platform.js";
import { terminalPlatform } from "./terminal/platform.js";
import { whatsappPlatform } from "./whatsapp/platform.js";

export const platforms = [terminalPlatform, telegramPlatform, discordPlatform, whatsappPlatform, slackPlatform] as const;

export type RegisteredPlatform = (typeof platforms)[number];
