/** LINE for the shared suite: the real adapter (`@line/bot-sdk`'s client, the shared webhook endpoint) against the fake LINE. */
import pino from "pino";
import { createLineAdapter } from "../../../../daemon/adapters/line/index.js";
import { linePlatform } from "../../../../daemon/adapters/line/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeLine } from "../../../fakes/line.js";
import { tempDir } from "../../../helpers/emulator.js";
import { lineChannelFor } from "../../../helpers/line-setup.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

export const TOKEN = "contractLineChannelAccessTokenThatMustStaySecret0123456789+/=";
export const SECRET = "0123456789abcdef0123456789abcdef";
const ALICE = `U${"a".repeat(32)}`;
const GROUP = `C${"b".repeat(32)}`;

export const features: readonly Feature[] = ["group", "buttons", "files"];

export const harness: HarnessFactory = async () => {
  // Redelivery on, as the set-up guide asks: an event the core could not take comes again.
  const fake = await createFakeLine({ channelAccessToken: TOKEN, channelSecret: SECRET, redelivery: true });
  const channel = lineChannelFor(
    fake,
    { token: TOKEN, secret: SECRET },
    {
      webhook_redelivery: true,
      access: { mode: "open" },
      // Files out by link on the channel's own endpoint (line-files.test.ts fetches them as LINE would).
      file_links: { public_base_url: "https://bridge.example.com/line/files" },
    },
  );
  const logs = logCollector();
  const dir = tempDir();
  const state = new Map<string, unknown>();
  const adapter = createLineAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: dir.path,
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (url) => fake.setWebhookUrl(`${url}${channel.http.path}`) },
  );
  return {
    adapter,
    secrets: linePlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.say({ userId: ALICE }, text),
    group: (text) => void fake.say({ userId: ALICE, group: GROUP }, text, { mentionBot: true }),
    shown: (chatId) => fake.messages(chatId).flatMap((m) => (m.text === undefined ? [] : [m.text])),
    // Media by their URL; any other file as the link in a text message: its last segment is the file's name.
    files: (chatId) =>
      fake.messages(chatId).flatMap((m) => {
        const url = m.url ?? /https:\/\/\S+\/line\/files\/\S+/.exec(m.text ?? "")?.[0];
        return url ? [decodeURIComponent(url.split("/").pop() ?? "")] : [];
      }),
    buttons: (chatId, messageId) => fake.quickReply(chatId, messageId),
    tap: (chatId, messageId, index) => void fake.tap(chatId, messageId, index, ALICE),
    close: async () => {
      await fake.close();
      dir.remove();
    },
  };
};
