/**
 * How a person names each platform of the registry (its descriptor's
 * `name`), in the registry's order: `--help`, the console, the listings.
 */
import { platforms } from "./registry.js";

/** How a person names `type`'s platform; the type itself for one the registry does not have. */
export const platformName = (type: string): string => platforms.find((p) => p.type === type)?.name ?? type;

/** Every platform, for a sentence: "Terminal, Telegram, Discord, WhatsApp and Slack". */
export function platformList(): string {
  const names = platforms.map((p) => p.name);
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : (names[0] ?? "");
}
