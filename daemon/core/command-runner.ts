/**
 * The bridge's own commands, run beside the session queue (a long turn in
 * flight does not hold up `/status`), in arrival order per chat. A command is
 * journaled like any message; its answer is recorded and delivered like a
 * reply, so a restart neither loses nor repeats it.
 */
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { withoutUndefined } from "../../shared/util/without-undefined.js";
import type { DaemonConfig } from "../config/schema.js";
import type { JournalEntry, OpenQuestion } from "../vocabulary/records.js";
import type { Store } from "../vocabulary/store.js";
import type { ChatAdapter } from "../vocabulary/adapter.js";
import { parseCommand, runCommand, type CommandName } from "./commands.js";
import { chunksFor, type Delivery } from "./delivery.js";
import { noticeText } from "./notices.js";
import { chatKeyOf, sessionKeyOf } from "../vocabulary/keys.js";
import { errorSummary, isShutdownError } from "./relay-types.js";
import { createSerialQueue } from "../helpers/retry.js";
import { sessionIdFor } from "./routing.js";
import { describeReset, startFreshSession } from "./session-reset.js";
import { configuredQueueMode, type ChatQueueModes } from "./queue-mode.js";
import { isListed, senderIds } from "./access.js";
import type { ChannelConfig } from "../config/schema.js";
import type { Scheduler } from "./scheduler.js";
import type { ServiceCalls } from "./service-call.js";

export interface CommandRunnerDeps {
  config: DaemonConfig;
  clock: Clock;
  store: Store;
  scheduler: Scheduler<string>;
  delivery: Delivery;
  service: ServiceCalls;
  logger: Logger;
  /** /stop: aborts the session's turn in flight and forgets its queued messages. */
  stopSession(route: JournalEntry["route"]): Promise<{ stopped: boolean; dropped: number }>;
  adapterFor(platform: string, accountId: string): ChatAdapter | undefined;
  channelFor(accountId: string): ChannelConfig | undefined;
  /** Every chat's own queue mode (`/queue`). */
  queueModes: ChatQueueModes;
  /** `/approve` from the chat of `entry`'s sender: the answer to say (pairing-commands.ts). */
  approvePairing(entry: JournalEntry, codeArg: string): Promise<string>;
  /** `/schedule list` from the chat of `entry`'s sender: the answer to say. */
  listSchedules(entry: JournalEntry): string;
  /** `/link` and `/link CODE` from the chat of `entry`'s sender: the answer to say. */
  link(entry: JournalEntry, codeArg: string): Promise<string>;
  /** `/unlink` from the chat of `entry`'s sender: the answer to say. */
  unlink(entry: JournalEntry): Promise<string>;
  /** /new: the open question the fresh conversation leaves behind loses its buttons (questions/questions.ts). */
  abandonQuestion?(entry: JournalEntry, question: OpenQuestion | undefined): Promise<void>;
}

export interface CommandRunner {
  /** Runs a journaled command entry (after the commands of its chat queued before it). */
  track(entry: JournalEntry): void;
  /** Resolves once no command is running or queued. */
  idle(): Promise<void>;
}

export function createCommandRunner(deps: CommandRunnerDeps): CommandRunner {
  const { store, scheduler, delivery, service } = deps;
  const log = deps.logger;
  const commandQueue = createSerialQueue<string>();
  /** Commands of one chat answer in the order they came (beside the turns, not behind them). */
  function trackCommand(entry: JournalEntry): void {
    void commandQueue
      .run(chatKeyOf(entry.message), () => runCommandEntry(entry))
      .catch((error: unknown) => {
        if (!isShutdownError(error)) log.error({ err: errorSummary(error) }, "command failed");
      });
  }

  async function runCommandEntry(entry: JournalEntry): Promise<void> {
    if (entry.reply) return delivery.deliver(entry.id);
    const parsed = parseCommand(entry.message.text);
    const adapter = deps.adapterFor(entry.message.platform, entry.message.accountId);
    if (!parsed || !adapter) return store.complete([entry.id]);
    const text = await commandReply(parsed.name, entry, parsed.args);
    await store.recordReply(entry.id, { chunks: chunksFor(adapter, text, "plain"), members: [entry.id], format: "plain" });
    await delivery.deliver(entry.id);
  }

  async function commandReply(name: CommandName, entry: JournalEntry, args: string): Promise<string> {
    const m = entry.message;
    const route = entry.route;
    const sessionKey = sessionKeyOf(route);
    const state = store.session(sessionKey);
    try {
      return await runCommand(
        name,
        {
          platform: m.platform,
          accountId: m.accountId,
          chatId: m.chatId,
          ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
          chatType: m.chatType,
          userId: m.userId,
          ...(m.userAliases ? { userAliases: m.userAliases } : {}),
          ...(m.userName ? { userName: m.userName } : {}),
          instanceId: route.instanceId,
          sessionId: state.lastResponseId && state.sessionId ? state.sessionId : sessionIdFor(route.sessionBase, state.generation),
          chained: !!state.lastResponseId,
          sessionReset: describeReset(deps.config, route.ruleIndex, m.accountId, state, deps.clock.now()),
          async resetSession() {
            const open = store.session(sessionKeyOf(route)).question;
            const id = await startFreshSession(store, route, m);
            await deps.abandonQuestion?.(entry, open);
            log.info({ platform: m.platform, chatId: m.chatId, instanceId: route.instanceId }, "conversation reset by the person");
            return id;
          },
          instanceStatus: () => service.instanceStatus(route.instanceId),
          stopTurn: () => deps.stopSession(route),
          queue: scheduler.depth(route.instanceId, route.sessionBase),
          ...withoutUndefined({ routeStopped: service.stoppedRoutes.get(route.ruleIndex) }),
          approvePairing: (codeArg) => deps.approvePairing(entry, codeArg),
          queueMode: {
            mode: deps.queueModes.modeOf(deps.config, m, route.ruleIndex),
            chosen: deps.queueModes.chosen(m) !== undefined,
          },
          setQueueMode: async (mode) => {
            // A group's mode applies to everyone in it: only the channel's owners change it there.
            const channel = deps.channelFor(m.accountId);
            if (m.chatType === "group" && !(channel && isListed(channel.access.owners, senderIds(m))))
              return "In a group only this channel's owners (access.owners) can change the queue mode.";
            await deps.queueModes.choose(chatKeyOf(m), mode);
            log.info(
              { platform: m.platform, chatId: m.chatId, mode: mode ?? configuredQueueMode(deps.config, route.ruleIndex, m.accountId) },
              "queue mode changed",
            );
            return undefined;
          },
          listSchedules: () => deps.listSchedules(entry),
          link: (codeArg) => deps.link(entry, codeArg),
          unlink: () => deps.unlink(entry),
        },
        args,
      );
    } catch (error) {
      log.error({ err: errorSummary(error) }, "command failed");
      return noticeText.commandFailed;
    }
  }

  return { track: trackCommand, idle: () => commandQueue.idle() };
}
