/** Signal for the shared suite: the real adapter (undici, SSE) against the fake signal-cli daemon. */
import pino from "pino";
import type { SignalChannelConfig } from "../../../../daemon/adapters/signal/config.js";
import { createSignalAdapter } from "../../../../daemon/adapters/signal/index.js";
import { signalPlatform } from "../../../../daemon/adapters/signal/platform.js";
import { daemonConfigSchema } from "../../../../daemon/config/schema.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeSignal } from "../../../fakes/signal.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

export const features: readonly Feature[] = ["group", "edits", "files", "reactions"];

export const harness: HarnessFactory = async () => {
  const fake = await createFakeSignal({ account: "+15550001111" });
  const alice = fake.person("Alice", "+15550002222");
  const group = fake.createGroup("Contract", [alice]);
  // A proxy's credentials in the URL are the channel's one secret.
  const url = fake.url.replace("http://", "http://bridge:proxyPassw0rdSecret@");
  const config = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    routes: [{ instance: "i" }],
    channels: [{ type: "signal", id: "sig", account: fake.account, url, access: { mode: "open" } }],
  });
  const channel = config.channels[0] as SignalChannelConfig;
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createSignalAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { retryPauseMs: 20 },
  );
  return {
    adapter,
    secrets: signalPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.direct(alice, text),
    group: (text) => void fake.group(group, alice, text, { mention: true }),
    shown: (chatId) => fake.sent(chatId).map((m) => m.text),
    files: (chatId) => fake.sent(chatId).flatMap((m) => m.attachments.map((a) => a.filename)),
    reactions: (chatId, messageId) => {
      const [timestamp, author] = [Number(messageId.split(":")[0]), messageId.slice(messageId.indexOf(":") + 1)];
      const emoji = fake.reactionOn(chatId, timestamp, author);
      return emoji ? [emoji] : [];
    },
    close: () => fake.close(),
  };
};
