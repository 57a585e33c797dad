/**
 * The Mattermost socket's own faults, the adapter against the fake server
 * with a test sink: an event lost in flight (a seq skipped) makes the adapter
 * reconnect with the seq it expected, and the server replays from there; a
 * socket whose pings go unanswered is replaced. Each post reaches the sink once.
 */
import pino from "pino";
import { expect, it } from "vitest";
import { mattermostChannelSchema } from "../../daemon/adapters/mattermost/config.js";
import { createMattermostAdapter } from "../../daemon/adapters/mattermost/index.js";
import type { AdapterStatusEvent, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeMattermost } from "../fakes/mattermost.js";
import { testSink } from "../fakes/sink.js";
import { waitUntil } from "../helpers/wait.js";

const TOKEN = "s0ckett0kenmuststaysecre12";
const BOT = { id: "b0tb0tb0tb0tb0tb0tb0tb0tb0", username: "agentbot" };
const ALICE = { id: "a11cea11cea11cea11cea11cea", username: "alice" };
const DM = "d1rectd1rectd1rectd1rectd1";

it("a skipped seq reconnects for the replay, and an unanswered ping replaces the socket; every post once", async () => {
  const fake = await createFakeMattermost({ token: TOKEN, bot: BOT, users: [ALICE], channels: [{ id: DM, type: "D" }] });
  const channel = { ...mattermostChannelSchema.parse({ type: "mattermost", bot_token: TOKEN, base_url: fake.baseUrl }), id: "mm" };
  const state = new Map<string, unknown>();
  const adapter = createMattermostAdapter(
    channel,
    {
      logger: pino({ level: "silent" }),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024,
    },
    { random: seededRandom("socket"), backoffInitialMs: 10, backoffMaxMs: 50, pingIntervalMs: 100 },
  );
  const received: InboundMessage[] = [];
  const statuses: AdapterStatusEvent[] = [];
  await adapter.start(testSink({ accept: (m) => void received.push(m), status: (e) => void statuses.push(e) }));
  try {
    const texts = () => received.map((m) => m.text);

    fake.loseNextEvents(1);
    fake.post({ channelId: DM, userId: ALICE.id, message: "lost in flight" });
    fake.post({ channelId: DM, userId: ALICE.id, message: "after the gap" });
    await waitUntil(() => texts().includes("after the gap") && texts().includes("lost in flight"), "both posts, the lost one replayed");
    expect(texts()).toEqual(["lost in flight", "after the gap"]);
    expect(fake.socketLog().filter((s) => s.resumed)).toHaveLength(1);

    fake.ignorePings(true);
    await waitUntil(() => statuses.some((s) => s.state === "reconnecting" && s.reason === "deaf"), "the deaf socket replaced");
    fake.ignorePings(false);
    fake.post({ channelId: DM, userId: ALICE.id, message: "on the new socket" });
    await waitUntil(() => texts().includes("on the new socket"), "a post on the new socket");
    expect(texts()).toEqual(["lost in flight", "after the gap", "on the new socket"]);
  } finally {
    await adapter.stop();
    await fake.close();
  }
});
