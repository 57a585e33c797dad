/**
 * How the console names a chat, everywhere it lists one: the platform as a
 * person says it, "group" for a group, the chat's id in brackets, its topic,
 * and the channel only when the config has more than one of that platform
 * ("Terminal (local)", "Telegram (7001)", "Telegram group (-1001), topic 7",
 * "Slack group (C42) via slack-eu"). Ids stay: two chats never read the same.
 */
import { platformName } from "../../adapters/platform-names.js";
import type { ChatRef } from "./activity.js";

export type ChatNamer = (chat: Omit<ChatRef, "key">) => string;

export function chatNamer(config: { channels: readonly { type: string }[] }): ChatNamer {
  const perPlatform = new Map<string, number>();
  for (const c of config.channels) perPlatform.set(c.type, (perPlatform.get(c.type) ?? 0) + 1);
  return (chat) => {
    const kind = chat.chatType === "group" ? " group" : "";
    const topic = chat.threadId !== undefined ? `, topic ${chat.threadId}` : "";
    const via = (perPlatform.get(chat.platform) ?? 0) > 1 ? ` via ${chat.accountId}` : "";
    return `${platformName(chat.platform)}${kind} (${chat.chatId})${topic}${via}`;
  };
}
