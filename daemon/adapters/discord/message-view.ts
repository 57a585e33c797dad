/**
 * Reads what the adapter needs off a discord.js `Message` into the plain
 * `DiscordMessageView` and `BotIdentity` that inbound.ts translates. The only
 * place on the inbound path that touches discord.js objects (no I/O: the
 * guild's role is read from the client's cache).
 */
import type { Client, Message } from "discord.js";
import type { BotIdentity, DiscordMessageView } from "./inbound.js";

export function viewOf(message: Message): DiscordMessageView {
  const channel = message.channel;
  return {
    id: message.id,
    channelId: message.channelId,
    guildId: message.guildId,
    parentChannelId: channel && "isThread" in channel && channel.isThread() ? channel.parentId : null,
    authorId: message.author.id,
    authorIsBot: message.author.bot,
    authorName: message.member?.displayName ?? message.author.globalName ?? message.author.username,
    isSystem: message.system,
    fromWebhook: message.webhookId !== null,
    content: message.content,
    createdTimestamp: message.createdTimestamp,
    mentionedUserIds: [...message.mentions.users.keys()],
    mentionedRoleIds: [...message.mentions.roles.keys()],
    repliedUserId: message.mentions.repliedUser?.id ?? null,
    attachments: [...message.attachments.values()].map((a) => ({
      id: a.id,
      name: a.name,
      url: a.url,
      size: a.size,
      contentType: a.contentType,
      duration: a.duration,
    })),
  };
}

/** The bot as the message's guild knows it: people often @mention its managed role instead of the bot. */
export function botIdentityOf(message: Message, client: Client<true>): BotIdentity {
  const role = message.guild?.roles.botRoleFor(client.user);
  return { id: client.user.id, name: client.user.username, roleIds: role ? [role.id] : [] };
}
