/**
 * Discord dispatches a message only to the sessions connected when it is
 * sent. What a guild channel or a DM received while the daemon was down is
 * caught up from the channel's history at the next session (catch-up.ts):
 * answered once, and nothing answered before is answered again. discord.js
 * against the local REST and gateway fake, which keeps every channel's
 * history as Discord does.
 */
import { expect, it, onTestFinished } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, waitFor, type FakeDiscord, type FakeUser } from "../fakes/discord.js";
import { startServiceFixture } from "../helpers/bridge.js";

const TOKEN = "MTA0NjY5.catch-up-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };

const contents = (fake: FakeDiscord, channelId: string) => fake.sentMessages(channelId).map((m) => m.content);

it("answers once what a channel and a DM received while the daemon was down, and nothing twice", async () => {
  const service = await startServiceFixture("discord-catch-up-");
  const fake = await createFakeDiscord({ token: TOKEN, guilds: [{ id: GUILD, name: "Guild", channels: [{ id: GENERAL, name: "general" }] }] });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "discord",
    id: "dc",
    token: TOKEN,
    api: fake.apiBase,
    streaming: "off",
    groupContext: { enabled: false },
    ackReaction: { scope: "off" },
    access: { users: [alice.id], groups: { [GENERAL]: {} } },
  });
  const launch = async (seed: number): Promise<Daemon> => {
    const daemon = createDaemon({ config, random: seededRandom(seed) });
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    return daemon;
  };
  const mention = (content: string) => ({ channelId: GENERAL, guildId: GUILD, author: alice, content: `<@${fake.bot.id}> ${content}`, mentions: [fake.bot] });
  const dm = fake.dmChannelFor(alice);

  const first = await launch(1);
  fake.dispatchMessage(mention("before"));
  fake.dispatchDirectMessage(alice, "before in dm");
  await waitFor(() => contents(fake, GENERAL).length === 1 && contents(fake, dm).length === 1, "the first answers");
  await first.whenIdle();
  await first.stop({ graceMs: 1000 });

  // Sent while no session was connected: in the history only.
  fake.postWhileAway(mention("while away 1"));
  fake.postWhileAway(mention("while away 2"));
  fake.postWhileAway({ channelId: dm, author: alice, content: "while away in dm" });

  const second = await launch(2);
  await waitFor(() => contents(fake, GENERAL).length === 3 && contents(fake, dm).length === 2, "the caught-up answers");
  await second.whenIdle();
  expect(contents(fake, GENERAL)).toEqual(["You said: before", "You said: while away 1", "You said: while away 2"]);
  expect(contents(fake, dm)).toEqual(["You said: before in dm", "You said: while away in dm"]);
  // A third start finds nothing new to answer: once it has read both channels' history, nothing more is sent.
  await second.stop({ graceMs: 1000 });
  const historyReads = () => fake.platformCalls().filter((c) => c.call === "GET /channels/:id/messages").length;
  const readsBefore = historyReads();
  const third = await launch(3);
  await waitFor(() => historyReads() === readsBefore + 2, "the third start's catch-up");
  fake.dispatchDirectMessage(alice, "after");
  await waitFor(() => contents(fake, dm).length === 3, "the live answer");
  await third.whenIdle();
  expect(contents(fake, GENERAL)).toHaveLength(3);
  expect(contents(fake, dm)).toEqual(["You said: before in dm", "You said: while away in dm", "You said: after"]);
});
