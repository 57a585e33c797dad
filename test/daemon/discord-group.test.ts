/**
 * What a Discord guild channel sees of the bridge beyond the answer (issue
 * #20): unaddressed messages sent as context with the next mention, the 👀
 * reaction (`PUT .../reactions/{emoji}/@me`) on a message taken and its
 * removal once answered, and whether a reply pings its asker
 * (`allowed_mentions.replied_user`). Real discord.js against the fake.
 */
import { expect, it, onTestFinished } from "vitest";
import { CONTEXT_HEADER } from "../../daemon/core/group-context.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, waitFor, type FakeDiscord, type FakeUser } from "../fakes/discord.js";
import { startServiceFixture } from "../helpers/bridge.js";

const TOKEN = "MTA0NjY5.group-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };
const bob: FakeUser = { id: "700000000000000002", username: "bob" };

async function bridge(channel: Record<string, unknown> = {}) {
  const service = await startServiceFixture("discord-group-");
  const fake = await createFakeDiscord({ token: TOKEN, guilds: [{ id: GUILD, name: "Guild", channels: [{ id: GENERAL, name: "general" }] }] });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "discord",
    id: "dc",
    token: TOKEN,
    api: fake.apiBase,
    streaming: "off",
    access: { users: [alice.id, bob.id], groups: { [GENERAL]: {} } },
    ...channel,
  });
  const daemon = createDaemon({ config, random: seededRandom(9) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { fake, daemon };
}

const say = (fake: FakeDiscord, author: FakeUser, content: string) => fake.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author, content });
const ask = (fake: FakeDiscord, author: FakeUser, content: string) =>
  fake.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author, content: `<@${fake.bot.id}> ${content}`, mentions: [fake.bot] });
const contents = (fake: FakeDiscord) => fake.sentMessages(GENERAL).map((m) => m.content);

it("sends the channel's unaddressed messages as marked context with the next mention", async () => {
  const { fake, daemon } = await bridge();
  say(fake, alice, "the build is red");
  say(fake, bob, "since this morning");
  ask(fake, alice, "any idea why?");
  await waitFor(() => contents(fake).length === 1, "the answer");
  await daemon.whenIdle();
  expect(contents(fake)[0]).toBe(
    `You said: ${CONTEXT_HEADER}\n[alice] the build is red\n[bob] since this morning\n\nAddressed to you by [alice]:\nany idea why?`,
  );
});

it("reacts 👀 to a mention it takes and removes it once answered", async () => {
  const { fake, daemon } = await bridge();
  const asked = ask(fake, alice, "hello");
  await waitFor(() => contents(fake).length === 1, "the answer");
  await daemon.whenIdle();
  await waitFor(() => fake.reactionLog.length === 2, "the reaction set and removed");
  expect(fake.reactionLog).toEqual([
    { messageId: asked.id, emoji: "👀", op: "add" },
    { messageId: asked.id, emoji: "👀", op: "remove" },
  ]);
  expect(fake.reactionsOn(String(asked.id))).toEqual([]);
});

it("a reply pings its asker by default, and not with replyNotifies: false; agent text pings nobody either way", async () => {
  const loud = await bridge();
  ask(loud.fake, alice, "ping me");
  await waitFor(() => contents(loud.fake).length === 1, "the answer");
  expect(loud.fake.sentMessages(GENERAL)[0]?.allowedMentions).toEqual({ parse: [], replied_user: true });

  const quiet = await bridge({ replyNotifies: false });
  const asked = ask(quiet.fake, alice, "do not ping me");
  await waitFor(() => contents(quiet.fake).length === 1, "the answer");
  expect(quiet.fake.sentMessages(GENERAL)[0]).toMatchObject({ replyTo: asked.id, allowedMentions: { parse: [], replied_user: false } });
});
