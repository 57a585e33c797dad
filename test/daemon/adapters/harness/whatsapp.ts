/** WhatsApp for the shared suite: the adapter over the fake Baileys socket (test/fakes/baileys-socket.ts). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import type { WhatsAppChannelConfig } from "../../../../daemon/adapters/whatsapp/config.js";
import { createWhatsAppAdapter } from "../../../../daemon/adapters/whatsapp/index.js";
import { whatsappPlatform } from "../../../../daemon/adapters/whatsapp/platform.js";
import { daemonConfigSchema } from "../../../../daemon/config/schema.js";
import { createManualClock } from "../../../../shared/clock.js";
import { seededRandom } from "../../../../shared/random.js";
import { BOT_ACCOUNT, createFakeBaileys, createFakeMedia, directByPhone, groupText, pnJid } from "../../../fakes/baileys-socket.js";
import { waitUntil } from "../../../helpers/wait.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const ANA = "4915111111111";
const GUS = "4915122222222";
const GROUP = "120363000000000001@g.us";

export const features: readonly Feature[] = ["group", "files", "reactions", "link"];

export const harness: HarnessFactory = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "wa-contract-"));
  const config = daemonConfigSchema.parse({ service: { apiKey: "svc_org_test" }, dataDir, channels: [{ type: "whatsapp", id: "wa" }] });
  const channel = config.channels[0] as WhatsAppChannelConfig;
  const fake = createFakeBaileys();
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createWhatsAppAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir,
      clock: createManualClock(),
      maxAttachmentBytes: 1024 * 1024,
    },
    {
      socketFactory: fake.factory,
      qrOutput: new Writable({ write: (_chunk, _encoding, done) => done() }),
      random: seededRandom("wa-contract"),
      mediaDownloader: createFakeMedia(1024).downloader,
    },
  );
  const sentTo = (chatId: string) => fake.sockets.flatMap((s) => s.sent).filter((s) => s.jid === chatId);
  return {
    adapter,
    secrets: whatsappPlatform.secrets(channel) ?? [],
    logs: logs.text,
    async connected() {
      await waitUntil(() => fake.sockets.length === 1, "the adapter's socket");
      fake.latest().open();
    },
    direct: (text) => fake.latest().receive([directByPhone(ANA, text)]),
    group: (text) => fake.latest().receive([groupText(GROUP, pnJid(GUS), text, { mentions: [pnJid(BOT_ACCOUNT.phone)] })]),
    shown: (chatId) => sentTo(chatId).flatMap((s) => (s.content.text !== undefined ? [s.content.text] : [])),
    files: (chatId) => sentTo(chatId).flatMap((s) => ("fileName" in s.content && typeof s.content.fileName === "string" ? [s.content.fileName] : [])),
    reactions: (chatId, messageId) => {
      const emoji = fake.latest().reactions.get(`${chatId}:${messageId}`);
      return emoji ? [emoji] : [];
    },
    close: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
};
