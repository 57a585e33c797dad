/**
 * Matrix for the shared suite: the real adapter against the fake homeserver (test/fakes/matrix.ts),
 * the person on the other side a matrix-js-sdk client of their own (the library a person's
 * client uses), in a direct room and a group room they invited the bot to.
 */
import { MatrixClient, MemoryStore } from "matrix-js-sdk";
import pino from "pino";
import type { MatrixChannelConfig } from "../../../../daemon/adapters/matrix/config.js";
import { createMatrixAdapter } from "../../../../daemon/adapters/matrix/index.js";
import { matrixPlatform } from "../../../../daemon/adapters/matrix/platform.js";
import { daemonConfigSchema } from "../../../../daemon/config/schema.js";
import { systemClock } from "../../../../shared/clock.js";
import { createFakeMatrix, type FakeMatrix } from "../../../fakes/matrix.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

export const features: readonly Feature[] = ["group", "thread", "edits", "files", "reactions"];

/** A person's client: matrix-js-sdk, logging nothing. */
export function personClient(fake: FakeMatrix, person: { userId: string; token: string; deviceId?: string }): MatrixClient {
  const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, getChild: () => quiet };
  // No event scheduler (it logs to the console, and retries are not what these tests are about).
  return new MatrixClient({
    store: new MemoryStore(),
    baseUrl: fake.url,
    accessToken: person.token,
    userId: person.userId,
    ...(person.deviceId ? { deviceId: person.deviceId } : {}),
    logger: quiet,
  });
}

/** A message content as a person's client sends it (the SDK's content types are stricter than the spec's JSON). */
export async function say(client: MatrixClient, roomId: string, content: Record<string, unknown>, threadId: string | null = null): Promise<string> {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK types each msgtype's content; tests send raw spec JSON.
  const sent = await client.sendMessage(roomId, threadId, content as any);
  return sent.event_id;
}

export const harness: HarnessFactory = async () => {
  const fake = await createFakeMatrix();
  const bot = fake.register("bridgebot", "Bridge Bot");
  const alice = fake.register("alice", "Alice");
  const dm = fake.createRoom(alice.userId, { direct: true, invite: [bot.userId] });
  const group = fake.createRoom(alice.userId, { name: "team", invite: [bot.userId] });
  const config = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_test" },
    routes: [{ instance: "i" }],
    channels: [{ type: "matrix", id: "mx", homeserver: fake.url, user_id: bot.userId, access_token: bot.token, access: { mode: "open" } }],
  });
  const channel = config.channels[0] as MatrixChannelConfig;
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = createMatrixAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, logs),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { pollTimeoutMs: 1000, retryPauseMs: 20 },
  );
  const person = personClient(fake, alice);
  const mention = (text: string) => ({ msgtype: "m.text", body: `Bridge Bot: ${text}`, "m.mentions": { user_ids: [bot.userId] } });
  let root: string | undefined;
  return {
    adapter,
    secrets: matrixPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: async (text) => void (await say(person, dm, { msgtype: "m.text", body: text })),
    group: async (text) => void (await say(person, group, mention(text))),
    thread: {
      async say(text) {
        root ??= await say(person, group, { msgtype: "m.text", body: "a thread about the contract" });
        await say(person, group, mention(text), root);
      },
      shown: () =>
        fake
          .shown(group, bot.userId)
          .filter((m) => (m.event.content["m.relates_to"] as { rel_type?: string; event_id?: string } | undefined)?.event_id === root)
          .map((m) => m.body),
    },
    shown: (chatId) => fake.shown(chatId, bot.userId).map((m) => m.body),
    files: (chatId) =>
      fake
        .events(chatId)
        .filter((e) => e.sender === bot.userId && typeof e.content.url === "string")
        .map((e) => String(e.content.filename ?? e.content.body)),
    reactions: (chatId, messageId) => fake.reactions(chatId, messageId, bot.userId),
    close: () => fake.close(),
  };
};
