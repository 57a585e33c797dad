/** Feishu/Lark for the shared suite: the real SDK client and the HTTP event endpoint against the fake Feishu (encrypted, signed events). */
import pino from "pino";
import { feishuChannelSchema } from "../../../../daemon/adapters/feishu/config.js";
import { createFeishuAdapter } from "../../../../daemon/adapters/feishu/index.js";
import { feishuPlatform } from "../../../../daemon/adapters/feishu/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeFeishu } from "../../../fakes/feishu.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const APP_ID = "cli_a1b2c3d4e5f60718";
const APP_SECRET = "contractAppSecretThatMustStaySecret01";
const ENCRYPT_KEY = "contractEncryptKeyMustStaySecret";
const VERIFICATION_TOKEN = "contractVerificationTokenSecret";
const ALICE = "ou_alice00000000000000000000000001";
const DM = "oc_dm_alice0000000000000000000001";
const GROUP = "oc_group0000000000000000000000001";

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "reactions", "buttons"];

export const harness: HarnessFactory = async () => {
  const fake = await createFakeFeishu({
    appId: APP_ID,
    appSecret: APP_SECRET,
    encryptKey: ENCRYPT_KEY,
    verificationToken: VERIFICATION_TOKEN,
    retryDelaysMs: [20, 20, 20],
  });
  const channel = {
    ...feishuChannelSchema.parse({
      type: "feishu",
      app_id: APP_ID,
      app_secret: APP_SECRET,
      encrypt_key: ENCRYPT_KEY,
      verification_token: VERIFICATION_TOKEN,
      api: fake.apiBase,
      mode: "http",
      http: { port: 0 },
      access: { mode: "open" },
    }),
    id: "fs",
  };
  const logs = logCollector();
  const state = new Map<string, unknown>();
  let listening: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (listening = resolve));
  const adapter = createFeishuAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (u) => listening(u) },
  );
  let root: string | undefined;
  const inThread = () => {
    const r = root ? fake.messages(GROUP).find((m) => m.id === root) : undefined;
    return r?.threadId ? fake.messages(GROUP).filter((m) => m.threadId === r.threadId) : [];
  };
  return {
    adapter,
    secrets: feishuPlatform.secrets(channel) ?? [],
    logs: logs.text,
    async connected() {
      fake.setRequestUrl(`${await url}${channel.http.path}`);
    },
    direct: (text) => void fake.say({ user: ALICE, chatId: DM, chatType: "p2p", text }),
    group: (text) => void fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text, mentionBot: true }),
    // A thread (topic) under a person's message in the group.
    thread: {
      say(text) {
        root ??= fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text: "a thread starts here" }).message.id;
        fake.say({ user: ALICE, chatId: GROUP, chatType: "group", text, mentionBot: true, threadOf: root });
      },
      shown: () => inThread().flatMap((m) => (m.sender === "bot" ? [fake.textOf(m)] : [])),
    },
    shown: (chatId) => fake.messages(chatId).flatMap((m) => (m.sender === "bot" ? [fake.textOf(m)] : [])),
    files: (chatId) => fake.filesOf(chatId),
    reactions: (_chatId, messageId) => fake.reactions(messageId),
    buttons: (_chatId, messageId) => fake.buttonsOf(messageId),
    tap: (_chatId, messageId, index) => void fake.tap({ user: ALICE, messageId, index }),
    close: () => fake.close(),
  };
};
