/**
 * The bridge's own chat commands. They answer at once, beside the session's
 * queue (a long turn in flight does not hold up `/status`). Anything else
 * that starts with "/" goes to the agent as an ordinary message.
 */

import type { QueueMode } from "../vocabulary/config-fields.js";
import { noticeText } from "./notices.js";
import { isQueueMode, QUEUE_MODES } from "./queue-mode.js";

export const COMMANDS = {
  new: "start a fresh conversation (the agent forgets this chat's context)",
  reset: "same as /new",
  status: "instance status, your session and the queue",
  stop: "stop the answer being written and drop your queued messages",
  whoami: "your platform ids and session id",
  queue: "what a message sent while the agent is answering does: /queue followup|collect|interrupt, /queue default",
  approve: "owners: let someone in with the pairing code they were given (/approve CODE)",
  schedule: "owners: the prompts this channel sends the agent on a schedule (/schedule list)",
  link: "talk to the agent as one person from another app: /link gives a code, /link CODE there uses it",
  unlink: "stop sharing one conversation with your other apps",
  help: "this list",
} as const;

export type CommandName = keyof typeof COMMANDS;

/** `/new`, `/new@SomeBot`, ` /STATUS extra`: the command, or undefined for ordinary text. */
export function parseCommand(text: string): { name: CommandName; args: string } | undefined {
  const m = /^\s*\/([A-Za-z]+)(?:@[\w.-]+)?(?:\s+([\s\S]*))?$/.exec(text);
  const name = m?.[1]?.toLowerCase();
  if (!name || !Object.hasOwn(COMMANDS, name)) return undefined;
  return { name: name as CommandName, args: (m?.[2] ?? "").trim() };
}

export interface CommandContext {
  platform: string;
  accountId: string;
  chatId: string;
  /** The thread within the chat the command came from (conversation.ts), if any. */
  threadId?: string;
  chatType: string;
  userId: string;
  userAliases?: string[];
  userName?: string;
  instanceId: string;
  sessionId: string;
  /** Whether the session already has a conversation chain. */
  chained: boolean;
  /** When the session resets on its own, as a sentence (session-reset.ts#describeReset). */
  sessionReset: string;
  /** Starts a fresh session; resolves with its id once persisted. */
  resetSession(): Promise<string>;
  /** The instance's status as the service reports it, or why it is unknown. */
  instanceStatus(): Promise<string>;
  queue: { sessionWaiting: number; sessionBusy: boolean; instanceWaiting: number; instanceRunning: number; totalWaiting: number };
  /** Aborts the person's turn in flight and drops their queued messages. */
  stopTurn(): Promise<{ stopped: boolean; dropped: number }>;
  /** Set when this route was stopped (the service refused the key). */
  routeStopped?: string;
  /** This chat's queue mode, and whether the chat chose it (else it is the config's). */
  queueMode: { mode: QueueMode; chosen: boolean };
  /** Sets this chat's queue mode (undefined: back to the config's); a refusal to say when this person may not. */
  setQueueMode(mode: QueueMode | undefined): Promise<string | undefined>;
  /** `/approve`: approves the pairing code named by `codeArg` (as journaled: hashed); the answer to the owner. */
  approvePairing(codeArg: string): Promise<string>;
  /** `/schedule list`: the channel's scheduled prompts, for an owner (schedules/listing.ts). */
  listSchedules(): string;
  /** `/link` (no code: a new one) and `/link CODE` (as journaled: hashed): the answer to say. */
  link(codeArg: string): Promise<string>;
  /** `/unlink`: the answer to say. */
  unlink(): Promise<string>;
}

export async function runCommand(name: CommandName, ctx: CommandContext, args = ""): Promise<string> {
  switch (name) {
    case "approve":
      return ctx.approvePairing(args);
    case "link":
      return ctx.link(args);
    case "unlink":
      return ctx.unlink();
    case "schedule":
      return args === "" || args.toLowerCase() === "list" ? ctx.listSchedules() : "Usage: /schedule list";
    case "new":
    case "reset": {
      const id = await ctx.resetSession();
      return `Started a new conversation: the agent no longer sees what was said before.\nSession: ${id}`;
    }
    case "stop": {
      const { stopped, dropped } = await ctx.stopTurn();
      return noticeText.stopped(stopped, dropped);
    }
    case "status": {
      const status = await ctx.instanceStatus();
      const q = ctx.queue;
      const lines = [
        `Instance: ${ctx.instanceId} (${status})`,
        `Session: ${ctx.sessionId}${ctx.chained ? "" : " (new)"}`,
        `Session resets: ${ctx.sessionReset}`,
        `Your messages: ${q.sessionBusy ? "1 being answered" : "none being answered"}, ${q.sessionWaiting} waiting`,
        `Instance queue: ${q.instanceRunning} running, ${q.instanceWaiting} waiting (all instances: ${q.totalWaiting} waiting)`,
      ];
      if (ctx.routeStopped) lines.push(`Route stopped: ${ctx.routeStopped}`);
      return lines.join("\n");
    }
    case "queue":
      return queueCommand(ctx, args.toLowerCase());
    case "whoami": {
      const lines = [
        `Platform: ${ctx.platform} (account ${ctx.accountId})`,
        `Chat: ${ctx.chatId} (${ctx.chatType})`,
        ...(ctx.threadId !== undefined ? [`Thread: ${ctx.threadId}`] : []),
        `User: ${ctx.userId}${ctx.userName ? ` (${ctx.userName})` : ""}`,
      ];
      if (ctx.userAliases?.length) lines.push(`Also known as: ${ctx.userAliases.join(", ")}`);
      lines.push(`Session: ${ctx.sessionId}`);
      return lines.join("\n");
    }
    case "help":
      return ["Commands:", ...Object.entries(COMMANDS).map(([n, d]) => `/${n}: ${d}`), "Anything else goes to the agent."].join("\n");
  }
}

const QUEUE_MEANS: Record<QueueMode, string> = {
  followup: "a message sent while the agent is answering waits and is answered on its own",
  collect: "messages sent while the agent is answering are answered together, as one next turn",
  interrupt: "a message sent while the agent is answering stops that answer, and the agent answers the newest with the ones before",
};

/** `/queue`: says the chat's mode, or sets it (`default` goes back to the config's). */
async function queueCommand(ctx: CommandContext, word: string): Promise<string> {
  if (!word) {
    const { mode, chosen } = ctx.queueMode;
    return `Queue mode: ${mode} (${chosen ? "chosen for this chat" : "the bridge's setting"}): ${QUEUE_MEANS[mode]}.\nChange it with /queue ${QUEUE_MODES.join("|")}, or /queue default.`;
  }
  if (word !== "default" && !isQueueMode(word)) return `Unknown queue mode "${word.slice(0, 40)}". Use /queue ${QUEUE_MODES.join("|")}, or /queue default.`;
  const mode = word === "default" ? undefined : word;
  const refusal = await ctx.setQueueMode(mode);
  if (refusal) return refusal;
  return mode ? `Queue mode for this chat: ${mode}: ${QUEUE_MEANS[mode]}.` : "This chat follows the bridge's queue setting again.";
}
