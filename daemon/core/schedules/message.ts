/**
 * A schedule's firing as the message the core journals: the chat the
 * schedule names, the person it names, the prompt as the text, and a message
 * id made of the schedule and the slot. That id is the firing's dedupe key, so
 * a slot is journaled once whatever fires it again (a restart, a second node).
 * Like a platform's message in a thread it says how the thread was named
 * before the one thread rule (`formerly`, as fire.ts asks the platform), so
 * its stored session moves the same way (core/former-sessions.ts). Pure.
 */
import type { InboundMessage } from "../../vocabulary/adapter.js";
import { encodeId } from "../../vocabulary/keys.js";
import type { ScheduleConfig } from "../../config/schedules.js";

/** Platform message ids never contain ":" (numbers, snowflakes, WhatsApp's hex ids), so this prefix cannot collide with one. */
const PREFIX = "schedule:";

/** The message one slot of `schedule` journals, on the platform of its channel; `formerly`: its thread's name before the one thread rule. */
export function scheduledMessage(schedule: ScheduleConfig, platform: string, slot: number, formerly?: InboundMessage["formerly"]): InboundMessage {
  return {
    platform,
    accountId: schedule.channel,
    chatId: schedule.chatId,
    ...(schedule.threadId !== undefined ? { threadId: schedule.threadId } : {}),
    ...(formerly ? { formerly } : {}),
    chatType: schedule.chatType,
    userId: schedule.userId ?? schedule.chatId,
    userName: `schedule ${schedule.id}`,
    messageId: `${PREFIX}${schedule.id}:${new Date(slot).toISOString()}`,
    text: schedule.prompt,
    sentAt: slot,
  };
}

/** The schedule a journaled message was fired by, or undefined for a person's message. */
export function scheduleIdOf(message: Pick<InboundMessage, "messageId">): string | undefined {
  if (!message.messageId.startsWith(PREFIX)) return undefined;
  const rest = message.messageId.slice(PREFIX.length);
  return rest.slice(0, rest.indexOf(":"));
}

/** A schedule with `session: "own"` speaks in a conversation of its own beside the chat's. */
export const ownSessionBase = (chatSessionBase: string, scheduleId: string): string => `${chatSessionBase}.schedule.${encodeId(scheduleId)}`;
