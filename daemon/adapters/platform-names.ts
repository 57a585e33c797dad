/**
 * How a person names each platform of the registry, in the registry's order.
 * Apart from registry.ts so the command line's `--help` can name them without
 * loading every platform's schema (it stays instant); the type check holds
 * the keys to the registry's types and a test holds the order
 * (test/daemon/unit/registry.test.ts).
 */
import type { RegisteredPlatform } from "./registry.js";

export const PLATFORM_NAMES = {
  terminal: "Terminal",
  telegram: "Telegram",
  discord: "Discord",
  whatsapp: "WhatsApp",
  slack: "Slack",
  mattermost: "Mattermost",
} as const satisfies Record<RegisteredPlatform["type"], string>;

/** How a person names `type`'s platform; the type itself for one the registry does not have. */
export const platformName = (type: string): string => byType.get(type) ?? type;
const byType = new Map<string, string>(Object.entries(PLATFORM_NAMES));

/** Every platform, for a sentence: "Terminal, Telegram, Discord, WhatsApp and Slack". */
export function platformList(): string {
  const names: string[] = Object.values(PLATFORM_NAMES);
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : (names[0] ?? "");
}
