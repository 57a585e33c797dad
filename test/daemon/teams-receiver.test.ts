/**
 * Several machines (as Slack's HTTP Events API): every node's receiver
 * verifies an activity as the owner would and keeps it in the bridge's inbox
 * (one row per activity); a forged one is refused and never kept; the owner
 * takes the rows through its adapter, in the core, and removes them.
 */
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { teamsChannelSchema } from "../../daemon/adapters/teams/config.js";
import { createTeamsAdapter } from "../../daemon/adapters/teams/index.js";
import { startTeamsReceiver } from "../../daemon/adapters/teams/receiver.js";
import type { Receiver } from "../../daemon/adapters/platform.js";
import type { ChatAdapter, EventInbox, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeTeams, type FakeTeams } from "../fakes/teams.js";
import { testSink } from "../fakes/sink.js";
import { waitUntil } from "../helpers/wait.js";

const APP_ID = "00000000-0000-4000-8000-000000000b01";
const APP_PASSWORD = "receiver~TeamsPasswordSecret";
const TENANT = "11111111-1111-4111-8111-111111111111";

let fake: FakeTeams;
let receiver: Receiver & { readonly url: string };
let owner: ChatAdapter;
const rows = new Map<string, unknown>();
const wakes = new Set<() => void>();
const inbox: EventInbox = {
  pending: async () => [...rows].map(([key, body]) => ({ key, body })),
  remove: async (keys) => {
    for (const k of keys) rows.delete(k);
  },
  watch: (wake) => {
    wakes.add(wake);
    return () => wakes.delete(wake);
  },
};
const received: InboundMessage[] = [];

beforeAll(async () => {
  fake = await createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT });
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
  const logger = pino({ level: "silent" });
  receiver = await startTeamsReceiver(channel, {
    logger,
    clock: systemClock,
    keep: async (key, body) => {
      rows.set(key, body);
      for (const wake of wakes) wake();
    },
  });
  fake.setBotEndpoint(`${receiver.url}/api/messages`);
  const state = new Map<string, unknown>();
  owner = createTeamsAdapter(channel, {
    logger,
    state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
    dataDir: "/nonexistent",
    clock: systemClock,
    maxAttachmentBytes: 1024 * 1024,
    inbox,
  });
});
afterAll(async () => {
  await owner.stop();
  await receiver.close();
  await fake.close();
});

it("keeps a verified activity for the owner, refuses a forged one, and the owner answers what it kept", async () => {
  expect((await fake.say("forged", { id: "forged-1", forge: { foreignKey: true } })).status).toBe(401);
  expect((await fake.say("kept for the owner", { id: "kept-1" })).status).toBe(200);
  // The connector's repeat of the same activity is one row.
  expect((await fake.say("kept for the owner", { id: "kept-1" })).status).toBe(200);
  expect([...rows.keys()]).toEqual(["activity:a:personal-alice/kept-1"]);
  await owner.start(testSink({ accept: (m) => void received.push(m) }));
  const message = await waitUntil(() => received.find((m) => m.messageId === "kept-1"), "the kept activity at the owner");
  expect(received.some((m) => m.messageId === "forged-1")).toBe(false);
  await waitUntil(() => rows.size === 0, "the row removed");
  // The owner kept the conversation reference from the row: its reply reaches the chat.
  await owner.send({ platform: "teams", accountId: "tm", chatId: message.chatId, chatType: "direct" }, "answered by the owner", { format: "plain" });
  expect(fake.messages(message.chatId).at(-1)?.text).toBe("answered by the owner");
});
