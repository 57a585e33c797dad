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

/** The platforms as a person names them, in the registry's order ("Terminal, Telegram, ... and Slack"). */
export const platformNames = (): string => {
  const labels = platforms.map((p) => p.label);
  return labels.length > 1 ? `${labels.slice(0, -1).join(", ")} and ${labels.at(-1)}` : (labels[0] ?? "");
};

/** How a person names `type`'s platform; the type itself for one the registry does not have. */
export const platformLabel = (type: string): string => platforms.find((p) => p.type === type)?.label ?? type;
