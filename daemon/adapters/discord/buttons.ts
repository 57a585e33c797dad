/**
 * Questions with buttons on Discord: message components, one button per
 * option (rows of at most five, at most five rows); a tap is an interaction
 * (INTERACTION_CREATE, type 3), handed to the core as an inbound message with
 * `answers` and answered with what the core said. Discord fails the tap for
 * the person unless the interaction is answered within 3 seconds, and takes
 * one answer only: a tap the core has not settled by `deadlineMs` is answered
 * with a deferred update first (the person sees nothing fail), and a refusal
 * that comes later follows as an ephemeral message. Discord never delivers an
 * interaction again, so a tap the core could not take is answered with a
 * request to tap again rather than left to a redelivery that never comes.
 */
import { ButtonStyle, ComponentType, MessageFlags, type ButtonInteraction } from "discord.js";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { AcceptOutcome, ButtonCapability, InboundMessage, InboundSink } from "../../vocabulary/adapter.js";
import type { ActionRows, DiscordOutbound } from "./outbound.js";
import { channelOf, errorText } from "./outbound.js";
import { placeOf } from "./inbound.js";

/** Discord's limits on components: `custom_id` 1-100 characters, a label 80, five buttons a row, five rows. */
export const CUSTOM_ID_MAX = 100;
const LABEL_MAX = 80;
const PER_ROW = 5;
const MAX_ROWS = 5;
/** Answered by then, the 3 s Discord allows are met with room for the answer's own trip. */
export const TAP_DEADLINE_MS = 2000;

/** `q:<question id>:<option number>`; undefined when it would not fit Discord's 100 characters. */
export function customIdOf(questionId: string, option: number): string | undefined {
  const id = `q:${questionId}:${option}`;
  return id.length <= CUSTOM_ID_MAX ? id : undefined;
}

/** A tap's question and option, or undefined for an id that is not the bridge's. */
export function readCustomId(customId: string): { questionId: string; option: number } | undefined {
  const m = /^q:([A-Za-z0-9_-]{1,80}):(\d{1,2})$/.exec(customId);
  return m ? { questionId: m[1]!, option: Number(m[2]) } : undefined;
}

/** The rows of buttons for `options`; throws when an option cannot be a Discord button. */
export function actionRowsOf(questionId: string, options: readonly string[]): ActionRows {
  if (options.length > PER_ROW * MAX_ROWS) throw new Error(`${options.length} options are more than Discord's ${PER_ROW * MAX_ROWS} buttons`);
  const buttons = options.map((label, i) => {
    const customId = customIdOf(questionId, i + 1);
    if (!customId) throw new Error("a button's custom_id would be longer than Discord's 100 characters");
    const shown = label.length > LABEL_MAX ? `${label.slice(0, LABEL_MAX - 1)}…` : label;
    const style: ButtonStyle.Primary | ButtonStyle.Secondary = i === 0 ? ButtonStyle.Primary : ButtonStyle.Secondary;
    return { type: ComponentType.Button as const, style, label: shown, custom_id: customId };
  });
  const rows: ActionRows = [];
  for (let i = 0; i < buttons.length; i += PER_ROW) rows.push({ type: ComponentType.ActionRow, components: buttons.slice(i, i + PER_ROW) });
  return rows;
}

export function discordButtons(outbound: Pick<DiscordOutbound, "sendComponents" | "editComponents">): ButtonCapability {
  return {
    ask(target, question) {
      const text = question.allowText ? `${question.text}\n(Tap an option, or write your own answer.)` : question.text;
      return outbound.sendComponents(target, text, actionRowsOf(question.id, question.options));
    },
    // No components: the buttons go.
    close: (target, messageId, _question, outcome) => outbound.editComponents(target, messageId, outcome, []),
  };
}

/** What the core needs of a button interaction, read off discord.js (interactionView) so the translation stays pure. */
export interface DiscordTapView {
  interactionId: string;
  customId: string;
  channelId: string;
  /** Null in DMs. */
  guildId: string | null;
  /** A thread's parent channel. */
  parentChannelId: string | null;
  userId: string;
  userName: string;
  userIsBot: boolean;
}

/** The tap as the core's inbound message, or undefined when it is not a tap on the bridge's buttons. */
export function translateTap(view: DiscordTapView, accountId: string, now: number): InboundMessage | undefined {
  const read = readCustomId(view.customId);
  if (!read || view.userIsBot) return undefined;
  const group = view.guildId !== null;
  return {
    platform: "discord",
    accountId,
    ...placeOf(view),
    chatType: group ? "group" : "direct",
    userId: view.userId,
    userName: view.userName,
    messageId: `ix:${view.interactionId}`,
    text: String(read.option),
    sentAt: now,
    answers: { questionId: read.questionId },
  };
}

/** The facts of a button interaction: in a guild the person comes as `member.user`, in a DM as `user` (discord.js gives both as `user`). */
export function interactionView(interaction: ButtonInteraction): DiscordTapView {
  const channel = interaction.channel;
  return {
    interactionId: interaction.id,
    customId: interaction.customId,
    channelId: interaction.channelId,
    guildId: interaction.guildId,
    parentChannelId: channel?.isThread() ? channel.parentId : null,
    userId: interaction.user.id,
    userName: interaction.user.globalName ?? interaction.user.username,
    userIsBot: interaction.user.bot,
  };
}

/** What the person who tapped is told (only to them), by what the core answered; undefined: nothing to say. */
export function tapAnswerText(outcome: AcceptOutcome): string | undefined {
  if (outcome.status === "accepted") return undefined;
  if (outcome.status === "duplicate") return "Already answered.";
  if (outcome.status === "refused") return outcome.reason === "not_yours" ? "This question is not yours to answer." : "Already answered.";
  return "The bridge could not take your answer just now: tap again in a moment.";
}

export interface TapDeps {
  sink: InboundSink;
  accountId: string;
  clock: Clock;
  log: Logger;
  redact(text: string): string;
  /** How long the core may take before the tap is answered with a deferred update. Default `TAP_DEADLINE_MS`. */
  deadlineMs?: number;
  /**
   * Runs the hand-over behind the channel's earlier taps, so a double tap
   * reaches the core second and is told it came second.
   */
  inOrder<T>(chatId: string, work: () => Promise<T>): Promise<T>;
}

/**
 * Hands a tap to the core and answers the interaction once, within Discord's
 * deadline: silently (a deferred update; the question's message then changes
 * to what was chosen) when accepted, with an ephemeral message otherwise.
 */
export async function handOverTap(interaction: ButtonInteraction, deps: TapDeps): Promise<void> {
  const tap = translateTap(interactionView(interaction), deps.accountId, deps.clock.now());
  const answered = answerer(interaction, deps);
  if (!tap) return answered.silently();
  const timer = new AbortController();
  // The deadline counts from the tap, not from its turn in the channel's order.
  const accepting = deps.inOrder(channelOf(tap), () => deps.sink.accept(tap));
  const late = deps.clock.sleep(deps.deadlineMs ?? TAP_DEADLINE_MS, timer.signal).then(
    () => "late" as const,
    () => "settled" as const,
  );
  const first = await Promise.race([accepting.then(() => "settled" as const), late]);
  if (first === "late") await answered.silently();
  timer.abort();
  const outcome = await accepting;
  const text = tapAnswerText(outcome);
  if (text === undefined) return answered.silently();
  return answered.privately(text);
}

/** Answers an interaction: the first answer is its callback, a later one a follow-up; failures only logged (the tap's fate is the core's). */
function answerer(interaction: ButtonInteraction, deps: Pick<TapDeps, "log" | "redact">) {
  const failed = (error: unknown) => deps.log.debug({ err: deps.redact(errorText(error)) }, "discord interaction answer failed (the tap's outcome stands)");
  return {
    async silently(): Promise<void> {
      if (interaction.deferred || interaction.replied) return;
      await interaction.deferUpdate().catch(failed);
    },
    async privately(content: string): Promise<void> {
      const message = { content, flags: MessageFlags.Ephemeral } as const;
      await (interaction.deferred || interaction.replied ? interaction.followUp(message) : interaction.reply(message)).catch(failed);
    },
  };
}
