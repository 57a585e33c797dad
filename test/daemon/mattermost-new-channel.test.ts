/**
 * Mattermost's catch-up of a channel the bot never saw a post in, through the
 * real daemon and emulator: a person opens a direct channel with the bot and
 * writes there while the bot is offline (no socket, so no `direct_added` and
 * no `posted` reach it). At the next start the adapter lists its channels
 * (`GET /users/me/channels`), finds the one posted in after the last post it
 * saw, fetches its posts (`?since=`) and the agent answers each once; a later
 * reconnect that catches up again answers nothing twice.
 */
import { expect, it } from "vitest";
import { startServiceFixture } from "../helpers/bridge.js";
import { mattermostBridge } from "../helpers/mattermost-setup.js";
import { waitUntil } from "../helpers/wait.js";

const TOKEN = "newchant0kenmuststaysecre1";
const BOT = { id: "b0tb0tb0tb0tb0tb0tb0tb0tb0", username: "agentbot" };
const ALICE = { id: "a11cea11cea11cea11cea11cea", username: "alice" };
const BOB = { id: "b0bb0bb0bb0bb0bb0bb0bb0bb0", username: "bob" };
const DM = "d1rectd1rectd1rectd1rectd1";
const TOWN = "t0wnt0wnt0wnt0wnt0wnt0wnt0";
const TEAM = "teamteamteamteamteamteamte";

it("a direct channel opened and posted to while the bot was offline is found after it reconnects and answered once", { timeout: 60_000 }, async () => {
  const service = await startServiceFixture("mattermost-new-channel-");
  const { fake, launch } = await mattermostBridge(
    service,
    {
      token: TOKEN,
      bot: BOT,
      users: [ALICE, BOB],
      channels: [
        { id: DM, type: "D" },
        { id: TOWN, type: "O", team_id: TEAM, name: "town-square" },
      ],
    },
    { ackReaction: { scope: "off" }, access: { users: [ALICE.id, BOB.id], groups: { [TEAM]: {} } } },
  );
  // Said before the bot ever listened: history, not a message to answer.
  fake.postUnannounced({ channelId: TOWN, userId: ALICE.id, message: "@agentbot from before the bot existed" });
  const shown = (channelId: string) => fake.botPosts(channelId).map((p) => p.message);
  const listings = () => fake.calls().filter((c) => c.method === "GET" && c.path === "/api/v4/users/me/channels" && c.status === 200).length;

  const first = await launch(1);
  fake.post({ channelId: DM, userId: ALICE.id, message: "hello" });
  await waitUntil(() => shown(DM).length === 1, "the first answer");
  await first.whenIdle();
  await first.stop({ graceMs: 1000 });

  // While the bot is offline Bob opens a direct channel with it and writes twice.
  const bobDm = fake.openDirect(BOB.id);
  fake.postUnannounced({ channelId: bobDm, userId: BOB.id, message: "are you there?" });
  fake.postUnannounced({ channelId: bobDm, userId: BOB.id, message: "second thought" });

  const before = listings();
  const second = await launch(2);
  await waitUntil(() => shown(bobDm).length === 2, "both answers in the new channel");
  await second.whenIdle();
  expect(listings()).toBeGreaterThan(before);
  expect(shown(bobDm)).toEqual(["You said: are you there?", "You said: second thought"]);

  // A reconnect the server cannot resume catches up again: nothing is answered twice, and the channel is now known.
  const relisted = listings();
  fake.forgetConnections();
  await waitUntil(() => listings() > relisted, "the next catch-up");
  fake.post({ channelId: bobDm, userId: BOB.id, message: "live now" });
  await waitUntil(() => shown(bobDm).length === 3, "the live answer");
  await second.whenIdle();
  expect(shown(bobDm)).toEqual(["You said: are you there?", "You said: second thought", "You said: live now"]);
  expect(shown(DM)).toEqual(["You said: hello"]);
  expect(shown(TOWN)).toEqual([]);
});
