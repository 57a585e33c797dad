/** Telegram for the shared suite: grammY's real client against the fake Bot API, long polling. */
import pino from "pino";
import type { TelegramChannelConfig } from "../../../../daemon/adapters/telegram/config.js";
import { createTelegramAdapter } from "../../../../daemon/adapters/telegram/index.js";
import { telegramPlatform } from "../../../../daemon/adapters/telegram/platform.js";
import { daemonConfigSchema } from "../../../../daemon/config/schema.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeTelegram } from "../../../fakes/telegram-bot-api.js";
import { TELEGRAM_BOT_TOKEN } from "../../../helpers/tokens.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const alice = { id: 111, username: "alice" };
const GROUP = -100123;

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "reactions", "buttons"];

export const harness: HarnessFactory = async () => {
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  const config = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    routes: [{ instance: "i" }],
    channels: [{ type: "telegram", id: "tg", token: TELEGRAM_BOT_TOKEN, apiRoot: fake.url, access: { mode: "open" } }],
  });
  const channel = config.channels[0] as TelegramChannelConfig;
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createTelegramAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { pollTimeoutSeconds: 1, retryPauseMs: 20 },
  );
  let topic: number | undefined;
  return {
    adapter,
    secrets: telegramPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.privateText(alice, text),
    group: (text) => void fake.groupText(GROUP, alice, text, { mention: true }),
    // A forum topic of the group.
    thread: {
      say(text) {
        topic ??= fake.createTopic(GROUP, "contract", alice);
        fake.groupText(GROUP, alice, text, { mention: true, topic });
      },
      shown: () => fake.sentMessages(GROUP).flatMap((m) => (topic !== undefined && m.thread === topic ? [m.text] : [])),
    },
    shown: (chatId) => fake.shownMessages(chatId).map((m) => m.text),
    files: (chatId) => fake.sentFiles(chatId).map((f) => f.file_name),
    reactions: (chatId, messageId) => {
      const emoji = fake.reactionOn(chatId, Number(messageId));
      return emoji ? [emoji] : [];
    },
    buttons: (chatId, messageId) =>
      fake
        .shownMessages(chatId)
        .find((m) => m.message_id === Number(messageId))
        ?.keyboard?.flat()
        .map((b) => b.text) ?? [],
    tap(chatId, messageId, index) {
      const button = fake
        .shownMessages(chatId)
        .find((m) => m.message_id === Number(messageId))
        ?.keyboard?.flat()[index];
      if (!button) throw new Error(`no button ${index} on message ${messageId}`);
      fake.tap(chatId, Number(messageId), alice, button.callback_data);
    },
    close: () => fake.close(),
  };
};
