/**
 * The bridge's chat commands as Discord application commands (the `/` menu):
 * registered for the bot's application when a gateway session starts (a bulk
 * overwrite, so the menu is exactly this list however often it runs), and a
 * person's use of one, an APPLICATION_COMMAND interaction, read back as the
 * message `/name args` the core's commands parse. The interaction is
 * deferred at once (Discord's 3 s), and the core's answer to it edits the
 * deferred response (outbound.ts), so the person sees the answer where they
 * used the command.
 */
import { ApplicationCommandOptionType, ApplicationCommandType, type ChatInputCommandInteraction, type RESTPutAPIApplicationCommandsJSONBody } from "discord.js";
import type { AcceptOutcome, InboundMessage } from "../../vocabulary/adapter.js";
import { placeOf } from "./inbound.js";

/** What Discord lists; descriptions at most 100 characters, names lower case (Discord's rules). */
export const DISCORD_COMMANDS: RESTPutAPIApplicationCommandsJSONBody = [
  { type: ApplicationCommandType.ChatInput, name: "new", description: "Start a fresh conversation (the agent forgets this chat's context)" },
  { type: ApplicationCommandType.ChatInput, name: "status", description: "Instance status, your session and the queue" },
  { type: ApplicationCommandType.ChatInput, name: "stop", description: "Stop the answer being written and drop your queued messages" },
  {
    type: ApplicationCommandType.ChatInput,
    name: "queue",
    description: "What a message sent while the agent is answering does",
    options: [
      {
        type: ApplicationCommandOptionType.String,
        name: "mode",
        description: "followup, collect or interrupt; default: the channel's",
        required: false,
        choices: ["followup", "collect", "interrupt", "default"].map((mode) => ({ name: mode, value: mode })),
      },
    ],
  },
  { type: ApplicationCommandType.ChatInput, name: "whoami", description: "Your platform ids and session id" },
  {
    type: ApplicationCommandType.ChatInput,
    name: "approve",
    description: "Owners: let someone in with the pairing code they were given",
    options: [{ type: ApplicationCommandOptionType.String, name: "code", description: "The pairing code", required: true }],
  },
  {
    type: ApplicationCommandType.ChatInput,
    name: "link",
    description: "Talk to the agent as one person from another app",
    options: [{ type: ApplicationCommandOptionType.String, name: "code", description: "A code /link gave you in the other app", required: false }],
  },
  { type: ApplicationCommandType.ChatInput, name: "unlink", description: "Stop sharing one conversation with your other apps" },
  { type: ApplicationCommandType.ChatInput, name: "help", description: "What the bridge's commands do" },
];

/** What the core needs of a command interaction, read off discord.js so the translation stays pure. */
export interface DiscordCommandView {
  interactionId: string;
  name: string;
  /** The string options given, in order. */
  args: string[];
  channelId: string;
  /** Null in DMs. */
  guildId: string | null;
  parentChannelId: string | null;
  userId: string;
  userName: string;
  userIsBot: boolean;
}

/** The command as the message the core reads, or undefined for a command that is not the bridge's. */
export function translateCommand(view: DiscordCommandView, accountId: string, now: number): InboundMessage | undefined {
  if (view.userIsBot || !DISCORD_COMMANDS.some((c) => c.name === view.name)) return undefined;
  const group = view.guildId !== null;
  return {
    platform: "discord",
    accountId,
    ...placeOf(view),
    chatType: group ? "group" : "direct",
    // A command addresses the bot.
    ...(group ? { mentioned: true } : {}),
    userId: view.userId,
    userName: view.userName,
    messageId: `ix:${view.interactionId}`,
    text: [`/${view.name}`, ...view.args].join(" "),
    sentAt: now,
  };
}

/** What a command the core will not answer shows in place of "thinking"; undefined: the core answers it. */
export function commandRefusalText(outcome: AcceptOutcome | undefined): string | undefined {
  if (outcome === undefined || outcome.status === "deferred") return "The bridge could not take the command just now: try again in a moment.";
  if (outcome.status === "refused" && outcome.reason !== "pairing") return "The bridge does not take commands from you here.";
  return undefined;
}

export function commandView(interaction: ChatInputCommandInteraction): DiscordCommandView {
  const channel = interaction.channel;
  return {
    interactionId: interaction.id,
    name: interaction.commandName,
    args: interaction.options.data.flatMap((o) => (typeof o.value === "string" ? [o.value] : [])),
    channelId: interaction.channelId,
    guildId: interaction.guildId,
    parentChannelId: channel?.isThread() ? channel.parentId : null,
    userId: interaction.user.id,
    userName: interaction.user.globalName ?? interaction.user.username,
    userIsBot: interaction.user.bot,
  };
}
