/** Microsoft Teams for the shared suite: the real adapter (Agents SDK connector client, JWT validation) against the fake Teams. */
import pino from "pino";
import { teamsChannelSchema } from "../../../../daemon/adapters/teams/config.js";
import { createTeamsAdapter } from "../../../../daemon/adapters/teams/index.js";
import { teamsPlatform } from "../../../../daemon/adapters/teams/platform.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeTeams } from "../../../fakes/teams.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

const APP_ID = "00000000-0000-4000-8000-000000000b01";
const APP_PASSWORD = "contract~AppPasswordThatMustStaySecret";
const TENANT = "11111111-1111-4111-8111-111111111111";
const THREAD = "19:general@thread.tacv2;messageid=1700000000999";

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "buttons"];

interface Card {
  contentType: string;
  content?: { actions?: { title: string; data: unknown }[] };
}

export const harness: HarnessFactory = async () => {
  const fake = await createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT });
  const channel = {
    ...teamsChannelSchema.parse({
      type: "teams",
      app_id: APP_ID,
      app_password: APP_PASSWORD,
      tenant_id: TENANT,
      http: { port: 0 },
      openIdMetadata: fake.openIdMetadata,
      tokenEndpoint: fake.tokenEndpoint,
      access: { mode: "open" },
    }),
    id: "tm",
  };
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createTeamsAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (url) => fake.setBotEndpoint(url) },
  );
  const actions = (chatId: string, messageId: string) =>
    (fake.messages(chatId).find((m) => m.id === messageId)?.attachments ?? []).flatMap((a) => (a as Card).content?.actions ?? []);
  return {
    adapter,
    secrets: teamsPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void fake.say(text, { mention: false }),
    // A new post in a channel (Teams gives it a reply chain of its own, `<channel>;messageid=<post>`).
    group: (text) => void fake.say(text, { conversationType: "channel" }),
    // A channel post's reply chain: a conversation of its own (`<channel>;messageid=<root>`).
    thread: {
      say: (text) => void fake.say(text, { conversationType: "channel", conversationId: THREAD }),
      shown: () => fake.messages(THREAD).map((m) => m.text),
    },
    shown: (chatId) => fake.chatMessages(chatId).map((m) => m.text),
    // A file the chat shows: a file card (after the person's consent) or an inline image.
    files: (chatId) =>
      fake.messages(chatId).flatMap((m) =>
        m.attachments.flatMap((a) => {
          const card = a as { contentType?: string; name?: string };
          return card.name && (card.contentType === "application/vnd.microsoft.teams.card.file.info" || card.contentType?.startsWith("image/"))
            ? [card.name]
            : [];
        }),
      ),
    buttons: (chatId, messageId) => actions(chatId, messageId).map((a) => a.title),
    async tap(chatId, messageId, index) {
      const action = actions(chatId, messageId)[index];
      if (!action) throw new Error(`no button ${index} on ${messageId}`);
      const conversationType = chatId.startsWith("a:") ? "personal" : chatId.includes(";messageid=") ? "channel" : "groupChat";
      await fake.say("", { conversationType, conversationId: chatId, mention: false, value: action.data });
    },
    close: () => fake.close(),
  };
};
