/**
 * Mattermost end to end: the real daemon and a real emulator, the adapter
 * against the fake server. A direct message is answered; in a channel only a
 * post that @mentions the bot is, with the acknowledgement as a reaction
 * (`eyes`); a post in a thread is answered in that thread (`root_id`); a
 * streamed reply is one post edited in place at the paced rate, ending as the
 * answer; what was posted while the daemon was down is answered once at the
 * next start (catch-up by `?since=`), and nothing answered before again.
 */
import { expect, it, vi } from "vitest";
import { streamText } from "../../emulator/gateway/model.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { mattermostBridge } from "../helpers/mattermost-setup.js";
import { waitUntil } from "../helpers/wait.js";

const TOKEN = "e2et0kenthatmuststaysecre1";
const BOT = { id: "b0tb0tb0tb0tb0tb0tb0tb0tb0", username: "agentbot" };
const ALICE = { id: "a11cea11cea11cea11cea11cea", username: "alice" };
const DM = "d1rectd1rectd1rectd1rectd1";
const TOWN = "t0wnt0wnt0wnt0wnt0wnt0wnt0";
const TEAM = "teamteamteamteamteamteamte";

it("answers DMs, mentions in a channel (with the eyes reaction) and threads in place; streams by paced edits; catches up after a restart, once", {
  timeout: 60_000,
}, async () => {
  const service = await startServiceFixture("mattermost-e2e-");
  const { fake, launch } = await mattermostBridge(
    service,
    {
      token: TOKEN,
      bot: BOT,
      users: [ALICE],
      channels: [
        { id: DM, type: "D" },
        { id: TOWN, type: "O", team_id: TEAM, name: "town-square" },
      ],
    },
    { minEditIntervalMs: 200, access: { users: [ALICE.id], groups: { [TEAM]: {} } } },
  );
  const shown = (channelId: string, rootId?: string) => fake.botPosts(channelId, rootId).map((p) => p.message);

  const first = await launch(1);
  fake.post({ channelId: DM, userId: ALICE.id, message: "hello" });
  await waitUntil(() => shown(DM).length === 1, "the DM answer");
  expect(shown(DM)).toEqual(["You said: hello"]);

  fake.post({ channelId: TOWN, userId: ALICE.id, message: "talking among ourselves" });
  const asked = fake.post({ channelId: TOWN, userId: ALICE.id, message: "@agentbot are you there?" });
  await waitUntil(() => shown(TOWN).length === 1, "the channel answer");
  expect(shown(TOWN)).toEqual(["You said: are you there?"]);
  // The acknowledgement: eyes while the turn ran, removed once answered (the default `done` is none).
  await waitUntil(() => fake.calls().some((c) => c.method === "DELETE" && c.path.includes(`/posts/${asked.id}/reactions/eyes`)), "the reaction removed");
  expect(fake.calls().filter((c) => c.method === "POST" && c.path === "/api/v4/reactions" && c.status === 200)).toHaveLength(1);

  // A thread: the reply goes into it, not to the channel's top level.
  const root = fake.post({ channelId: TOWN, userId: ALICE.id, message: "a topic" });
  fake.post({ channelId: TOWN, userId: ALICE.id, message: "@agentbot in the thread", rootId: root.id });
  await waitUntil(() => shown(TOWN, root.id).length === 1, "the thread answer");
  expect(shown(TOWN, root.id)).toEqual(["You said: in the thread"]);

  // Streaming: one post, edited in place no closer than minEditIntervalMs, ending as the answer.
  fake.post({ channelId: DM, userId: ALICE.id, message: "!stream 3" });
  const preview = await waitUntil(() => fake.botPosts(DM)[1], "the streamed preview");
  await vi.waitFor(
    () => {
      service.emulator.clock.advance(250);
      expect(shown(DM)[1]).toBe(streamText(600));
    },
    { timeout: 30_000, interval: 20 },
  );
  expect(fake.botPosts(DM)).toHaveLength(2);
  const times = [preview.create_at, ...fake.editsOf(preview.id).map((e) => e.at)];
  expect(times.length).toBeGreaterThanOrEqual(2);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(190);
  await first.whenIdle();
  await first.stop({ graceMs: 1000 });

  // While the daemon is down: the server has no connection for the bot, the posts are only in the channels' history.
  fake.postUnannounced({ channelId: DM, userId: ALICE.id, message: "while away" });
  fake.postUnannounced({ channelId: TOWN, userId: ALICE.id, message: "@agentbot while away too" });
  const second = await launch(2);
  await waitUntil(() => shown(DM).length === 3 && shown(TOWN).length === 3, "the caught-up answers");
  await second.whenIdle();
  expect(shown(DM)).toEqual(["You said: hello", streamText(600), "You said: while away"]);
  expect(shown(TOWN)).toEqual(["You said: are you there?", "You said: in the thread", "You said: while away too"]);
  fake.post({ channelId: DM, userId: ALICE.id, message: "after" });
  await waitUntil(() => shown(DM).length === 4, "the live answer");
  await second.whenIdle();
  expect(shown(DM).at(-1)).toBe("You said: after");
  expect(shown(TOWN)).toHaveLength(3);
});
