/** Google Chat for the shared suite: the real adapter (google-auth-library, @google-apps/chat in REST mode) against the fake Google Chat. */
import pino from "pino";
import { googleChatChannelSchema } from "../../../../daemon/adapters/googlechat/config.js";
import { createGoogleChatAdapter } from "../../../../daemon/adapters/googlechat/index.js";
import { googleChatPlatform } from "../../../../daemon/adapters/googlechat/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { googleChatChannelFor, startFakeGoogleChat } from "../../../helpers/googlechat-setup.js";
import { tempDir } from "../../../helpers/emulator.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const PROJECT = "123456789012";
const DM = "spaces/dm-alice";
const SPACE = "spaces/team";

export const features: readonly Feature[] = ["group", "thread", "edits", "buttons", "files"];

export const harness: HarnessFactory = async () => {
  const fake = await startFakeGoogleChat(PROJECT);
  const channel = {
    ...googleChatChannelSchema.parse(
      googleChatChannelFor(fake, PROJECT, {
        // Every reply through the API here: the shared suite's sends need message ids (sync answers: googlechat-adapter.test.ts).
        syncReplyMs: 0,
        access: { mode: "open" },
        // Files out as cards linking to the app's own endpoint (googlechat-files.test.ts follows the links).
        file_links: { public_base_url: "https://bridge.example.com/googlechat/files" },
      }),
    ),
    id: "gc",
  };
  const logs = logCollector();
  const dir = tempDir();
  const state = new Map<string, unknown>();
  let listening: (url: string) => void = () => undefined;
  const ready = new Promise<string>((resolve) => {
    listening = resolve;
  });
  const adapter = createGoogleChatAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: dir.path,
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (url) => listening(url) },
  );
  void ready.then((url) => fake.setEndpoint(`${url}${channel.http.path}`));
  let thread: string | undefined;
  const bot = (chatId: string) => fake.messages(chatId).filter((m) => m.sender.type === "BOT");
  return {
    adapter,
    secrets: [...(googleChatPlatform.secrets(channel) ?? []), JSON.parse(fake.serviceAccountKey).private_key as string],
    logs: logs.text,
    connected: async () => void (await ready),
    direct: (text) => void fake.say({ space: DM, text }),
    group: (text) => void fake.say({ space: SPACE, text }),
    thread: {
      say(text) {
        if (thread === undefined) thread = fake.say({ space: SPACE, text: "a thread starts here" }).message.thread.name;
        fake.say({ space: SPACE, text, thread });
      },
      shown: () => bot(SPACE).flatMap((m) => (m.thread.name === thread ? [m.text] : [])),
    },
    shown: (chatId) => bot(chatId).map((m) => m.text),
    // A file is a card whose button opens its link: the link's last segment is the file's name.
    files: (chatId) =>
      bot(chatId).flatMap((m) =>
        (m.cardsV2 ?? []).flatMap((c) =>
          (c.card?.sections ?? []).flatMap((s) =>
            (s.widgets ?? []).flatMap((w) =>
              (w.buttonList?.buttons ?? []).flatMap((b) =>
                b.onClick?.openLink?.url ? [decodeURIComponent(b.onClick.openLink.url.split("/").pop() ?? "")] : [],
              ),
            ),
          ),
        ),
      ),
    buttons: (chatId, messageId) =>
      (fake.messages(chatId).find((m) => m.name === messageId)?.cardsV2 ?? []).flatMap((c) =>
        (c.card?.sections ?? []).flatMap((s) => (s.widgets ?? []).flatMap((w) => (w.buttonList?.buttons ?? []).map((b) => b.text ?? ""))),
      ),
    tap: async (_chatId, messageId, index) => void (await fake.tap(messageId, index)),
    close: async () => {
      await fake.close();
      dir.remove();
    },
  };
};
