/**
 * Discord through discord.js 14, wired from its parts: the gateway
 * (connection.ts) brings messages in, message-view.ts reads them, inbound.ts
 * translates them (`translateMessage`), hand-over.ts hands them to the core in
 * order; outbound.ts sends replies and typing through a REST client of its
 * own, so replies still go out while the gateway reconnects. Commands and
 * access control are the core's.
 */
import type { ButtonInteraction, ChatInputCommandInteraction, Client, Message } from "discord.js";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import { createSerialQueue } from "../../helpers/retry.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import { rawLength, type AdapterDeps, type ChatAdapter, type InboundSink } from "../../vocabulary/adapter.js";
import type { DiscordChannelConfig } from "./config.js";
import { createGatewayConnection, defaultConnectionTuning, type ConnectionTuning } from "./connection.js";
import { translateMessage } from "./inbound.js";
import { discordButtons, handOverTap } from "./buttons.js";
import { DiscordCatchUp } from "./catch-up.js";
import { commandRefusalText, commandView, DISCORD_COMMANDS, translateCommand } from "./commands.js";
import { DiscordHandOver } from "./hand-over.js";
import { botIdentityOf, viewOf } from "./message-view.js";
import { channelOf, createDiscordOutbound, DISCORD_FILE_LIMITS, DISCORD_LIMITS, errorText } from "./outbound.js";

export { ConnectFailure } from "./connect-failure.js";
export type { ConnectionTuning } from "./connection.js";
export { DISCORD_LIMITS, DiscordAdapterError, type DiscordAdapterErrorInit } from "./outbound.js";

export interface DiscordAdapterOptions extends Partial<ConnectionTuning> {
  /** Jitter for reconnect backoff. Default `cryptoRandom`. */
  random?: Random;
  /** Longest one attachment download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
}

export function createDiscordAdapter(config: DiscordChannelConfig, deps: AdapterDeps, options: DiscordAdapterOptions = {}): ChatAdapter {
  const accountId = config.id;
  const log = deps.logger.child({ adapter: "discord", accountId });
  // The one scrubber the daemon's logs use (the token's URL-encoded and JSON-escaped forms too).
  const redact = (text: string): string => redactSecrets(text, [config.token]);
  const { random = cryptoRandom, attachmentTimeoutMs = 60_000, ...tuningOverrides } = options;
  const tuning: ConnectionTuning = { ...defaultConnectionTuning, ...stripUndefined(tuningOverrides) };

  const outbound = createDiscordOutbound({
    api: config.api,
    token: config.token,
    log,
    redact,
    replyNotifies: config.replyNotifies,
    now: () => deps.clock.now(),
  });
  const handOver = new DiscordHandOver({ log, redact, attachmentTimeoutMs });
  const catchUp = new DiscordCatchUp({ state: deps.state, clock: deps.clock, log, redact });

  function onMessage(message: Message, client: Client<true>): void {
    const view = viewOf(message);
    const onIgnored = (reason: string) => log.debug({ messageId: view.id, chatId: view.channelId, reason }, "discord message ignored");
    const inbound = translateMessage(view, { bot: botIdentityOf(message, client), accountId, onIgnored });
    if (!inbound) return;
    handOver.take(inbound, view.attachments);
    catchUp.seen(view.channelId, view.id);
  }

  let sink: InboundSink | null = null;
  /** Taps being answered: stop waits for them (their answer is the core's outcome). */
  const taps = new Set<Promise<void>>();
  const tapOrder = createSerialQueue<string>();
  function onButton(interaction: ButtonInteraction): void {
    if (!sink) return;
    const tap = handOverTap(interaction, { sink, accountId, clock: deps.clock, log, redact, inOrder: (chatId, work) => tapOrder.run(chatId, work) }).catch(
      (error: unknown) => log.error({ err: redact(error instanceof Error ? error.message : String(error)) }, "discord tap not handed to the core"),
    );
    taps.add(tap);
    void tap.finally(() => taps.delete(tap));
  }

  async function onCommand(interaction: ChatInputCommandInteraction): Promise<void> {
    const message = translateCommand(commandView(interaction), accountId, deps.clock.now());
    // Deferred at once, whatever the core takes: Discord fails a command not answered within 3 s.
    const deferred = await interaction.deferReply().then(
      () => true,
      (error: unknown) => {
        log.debug({ err: redact(errorText(error)) }, "discord command not deferred");
        return false;
      },
    );
    if (!message || !sink) return;
    if (deferred) outbound.deferredCommand({ id: interaction.id, token: interaction.token, applicationId: interaction.applicationId });
    const given = sink;
    const outcome = await tapOrder.run(channelOf(message), () => given.accept(message)).catch(() => undefined);
    // The core answers what it took (and a stranger in pairing mode); a command it will not answer must not stay "thinking".
    const silent = commandRefusalText(outcome);
    if (silent && deferred) {
      const target = {
        platform: "discord",
        accountId,
        chatId: message.chatId,
        ...(message.threadId ? { threadId: message.threadId } : {}),
        chatType: message.chatType,
        replyToMessageId: message.messageId,
      };
      await outbound.send(target, silent).catch((error: unknown) => log.debug({ err: redact(errorText(error)) }, "discord command refusal not shown"));
    }
  }

  /** The `/` menu, for the application this session's bot belongs to; a failure leaves the menu as it was. */
  let registered = false;
  function registerCommands(client: Client<true>): void {
    // Once a start: a bulk overwrite is the same list each time, and Discord limits how often commands are written.
    if (registered) return;
    registered = true;
    const applicationId = client.application?.id ?? client.user.id;
    void outbound
      .registerCommands(applicationId, DISCORD_COMMANDS)
      .catch((error: unknown) => log.warn({ err: redact(errorText(error)) }, "discord application commands not registered (the / menu stays as it was)"));
  }

  const connection = createGatewayConnection({
    config,
    clock: deps.clock,
    random,
    log,
    redact,
    tuning,
    report: (event) => {
      const status = event.detail === undefined ? event : { ...event, detail: redact(event.detail) };
      // The core logs status news at info; this line is for adapter debugging.
      log.debug({ state: status.state, detail: status.detail }, "discord status");
      handOver.status(status);
    },
    onMessage,
    onButton,
    onCommand: (interaction) => void onCommand(interaction),
    // A new session misses what was sent before it: fetched from the channels' history (catch-up.ts).
    onNewSession: (client) => {
      registerCommands(client);
      void catchUp.run(client, (message) => onMessage(message, client));
    },
  });

  return {
    platform: "discord",
    accountId,
    limits: { ...DISCORD_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? DISCORD_LIMITS.minEditIntervalMs },
    redelivers: false,
    // Discord counts the raw text (it renders Markdown itself).
    measure: rawLength,

    async start(given) {
      sink = given;
      handOver.open(given);
      await connection.start();
    },

    async stop() {
      await connection.stop();
      // Messages already taken in still reach the core.
      await handOver.idle();
      await Promise.allSettled([...taps]);
      await catchUp.save();
      outbound.close();
    },

    // Discord renders Markdown itself, so "markdown" and "plain" both pass as is.
    send: (target, text) => outbound.send(target, text),
    edits: { edit: (target, messageId, text) => outbound.edit(target, messageId, text) },
    files: { limits: DISCORD_FILE_LIMITS, send: (target, file) => outbound.sendFile(target, file) },
    sendTyping: (target) => outbound.sendTyping(target),
    reactions: { react: (target, messageId, emoji, options) => outbound.react(target, messageId, emoji, options) },
    buttons: discordButtons(outbound),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
