/** Mattermost for the shared suite: the adapter (Client4's routes, the socket over undici) against the fake server. */
import pino from "pino";
import { mattermostChannelSchema } from "../../../../daemon/adapters/mattermost/config.js";
import { createMattermostAdapter } from "../../../../daemon/adapters/mattermost/index.js";
import { mattermostPlatform } from "../../../../daemon/adapters/mattermost/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { seededRandom } from "../../../../shared/random.js";
import { createFakeMattermost } from "../../../fakes/mattermost.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const TOKEN = "c0ntractt0kenmuststaysecr1";
const BOT = { id: "b0tb0tb0tb0tb0tb0tb0tb0tb0", username: "agentbot" };
const ALICE = { id: "a11cea11cea11cea11cea11cea", username: "alice" };
const DM = "d1rectd1rectd1rectd1rectd1";
const TOWN = "t0wnt0wnt0wnt0wnt0wnt0wnt0";
const TEAM = "teamteamteamteamteamteamte";

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "reactions"];

export const harness: HarnessFactory = async () => {
  const fake = await createFakeMattermost({
    token: TOKEN,
    bot: BOT,
    users: [ALICE],
    channels: [
      { id: DM, type: "D", name: `${BOT.id}__${ALICE.id}` },
      { id: TOWN, type: "O", team_id: TEAM, name: "town-square" },
    ],
  });
  const channel = { ...mattermostChannelSchema.parse({ type: "mattermost", bot_token: TOKEN, base_url: fake.baseUrl, access: { mode: "open" } }), id: "mm" };
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createMattermostAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { random: seededRandom("contract"), backoffInitialMs: 20 },
  );
  // The thread: a root post in the channel, its replies carry its id as root_id.
  let root: string | undefined;
  const threadRoot = (): string => (root ??= fake.post({ channelId: TOWN, userId: ALICE.id, message: "a thread starts here" }).id);
  return {
    adapter,
    secrets: mattermostPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.post({ channelId: DM, userId: ALICE.id, message: text }),
    group: (text) => void fake.post({ channelId: TOWN, userId: ALICE.id, message: `@${BOT.username} ${text}` }),
    thread: {
      say: (text) => void fake.post({ channelId: TOWN, userId: ALICE.id, message: `@${BOT.username} ${text}`, rootId: threadRoot() }),
      shown: () => (root ? fake.botPosts(TOWN, root).map((p) => p.message) : []),
    },
    shown: (chatId) =>
      fake
        .botPosts(chatId)
        .filter((p) => p.message !== "")
        .map((p) => p.message),
    files: (chatId) => fake.botPosts(chatId).flatMap((p) => fake.fileNamesOf(p)),
    reactions: (_chatId, messageId) => fake.reactionsOn(messageId),
    close: () => fake.close(),
  };
};
