/** Slack for the shared suite: the real Web API and Socket Mode clients against the fake Slack. */
import pino from "pino";
import { slackChannelSchema } from "../../../../daemon/adapters/slack/config.js";
import { conversationOf } from "../../../../daemon/adapters/slack/inbound.js";
import { createSlackAdapter } from "../../../../daemon/adapters/slack/index.js";
import { slackPlatform } from "../../../../daemon/adapters/slack/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeSlack } from "../../../fakes/slack.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const BOT_TOKEN = "xoxb-1111-2222-contractBotTokenThatMustStaySecret";
const APP_TOKEN = "xapp-1-A0APP00001-3333-contractAppTokenSecret";
const SIGNING_SECRET = "contractSigningSecret0123456789ab";
const ALICE = "U0ALICE001";
const DM = "D0ALICE001";
const GENERAL = "C0GENERAL1";

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "reactions", "buttons"];

export const harness: HarnessFactory = async () => {
  const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode: "socket", postBurst: 50 });
  const channel = {
    ...slackChannelSchema.parse({ type: "slack", botToken: BOT_TOKEN, mode: "socket", appToken: APP_TOKEN, api: fake.apiBase, access: { mode: "open" } }),
    id: "sl",
  };
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createSlackAdapter(channel, {
    logger: pino({ level: "trace" }, logs),
    state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
    dataDir: "/nonexistent",
    clock: systemClock,
    maxAttachmentBytes: 1024 * 1024,
  });
  // A thread is a chat of its own, `<channel>:<thread ts>` (inbound.ts).
  const inChat = (chatId: string) => {
    const { channel: id, threadTs } = conversationOf(chatId);
    return fake.messages(id).filter((m) => threadTs === undefined || m.threadTs === threadTs);
  };
  let root: string | undefined;
  return {
    adapter,
    secrets: slackPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.say({ user: ALICE, channel: DM, text }),
    group: (text) => void fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> ${text}` }),
    // A thread under a person's top-level message in the channel.
    thread: {
      say(text) {
        root ??= fake.say({ user: ALICE, channel: GENERAL, text: "a thread starts here" }).ts;
        fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> ${text}`, threadTs: root });
      },
      shown: () => fake.messages(GENERAL).flatMap((m) => (root !== undefined && m.threadTs === root ? [m.text] : [])),
    },
    shown: (chatId) => inChat(chatId).map((m) => m.text),
    files: (chatId) => inChat(chatId).flatMap((m) => m.files.map((f) => f.name)),
    reactions: (chatId, messageId) => fake.reactions(conversationOf(chatId).channel, messageId),
    buttons: (chatId, messageId) => fake.buttonsOn(conversationOf(chatId).channel, messageId),
    tap: async (chatId, messageId, index) => void (await fake.tap({ channel: conversationOf(chatId).channel, ts: messageId, user: ALICE, index })),
    close: () => fake.close(),
  };
};
