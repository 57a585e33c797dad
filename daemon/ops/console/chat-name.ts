/**
 * How the console names a chat, everywhere it lists one: the platform as a
 * person says it, "group" for a group, the chat's id in brackets, its topic,
 * and the channel only when the config has more than one of that platform
 * ("Terminal (local)", "Telegram (7001)", "Telegram group (-1001), topic 7",
 * "Slack group (C42) via slack-eu"). Ids stay: two chats never read the same.
 * The channels are counted on each call: a reload changes the running config
 * in place, and a second channel of a platform must add "via" at once.
 */
import { platformName } from "../../adapters/platform-names.js";
import type { ChatRef } from "./activity.js";

export type ChatNamer = (chat: Omit<ChatRef, "key">) => string;

export function chatNamer(config: { channels: readonly { type: string }[] }): ChatNamer {
  return (chat) => {
    const kind = chat.chatType === "group" ? " group" : "";
    const topic = chat.threadId !== undefined ? `, topic ${chat.threadId}` : "";
    const ofPlatform = config.channels.filter((c) => c.type === chat.platform).length;
    const via = ofPlatform > 1 ? ` via ${chat.accountId}` : "";
    return `${platformName(chat.platform)}${kind} (${chat.chatId})${topic}${via}`;
  };
}
