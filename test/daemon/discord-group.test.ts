/**
 * What a Discord guild channel sees of the bridge beyond the answer (issue
 * #20): unaddressed messages sent as context with the next mention, the 👀
 * reaction (`PUT .../reactions/{emoji}/@me`) on a message taken and its
 * removal once answered, and whether a reply pings its asker
 * (`allowed_mentions.replied_user`). A thread (issue #27) is a conversation
 * of its own under its parent channel's access rules. Real discord.js against
 * the fake.
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
/** A channel the bridge does not serve, and a thread under each. */
const RANDOM = "800000000000000003";
const GENERAL_THREAD = "800000000000000012";
const RANDOM_THREAD = "800000000000000013";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };
const bob: FakeUser = { id: "700000000000000002", username: "bob" };

async function bridge(channel: Record<string, unknown> = {}) {
  const service = await startServiceFixture("discord-group-");
  const fake = await createFakeDiscord({
    token: TOKEN,
    guilds: [
      {
        id: GUILD,
        name: "Guild",
        channels: [
          { id: GENERAL, name: "general" },
          { id: RANDOM, name: "random" },
        ],
        threads: [
          { id: GENERAL_THREAD, name: "release plans", parentId: GENERAL },
          { id: RANDOM_THREAD, name: "memes", parentId: RANDOM },
        ],
      },
    ],
  });
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
const ask = (fake: FakeDiscord, author: FakeUser, content: string, channelId = GENERAL) =>
  fake.dispatchMessage({ channelId, guildId: GUILD, author, content: `<@${fake.bot.id}> ${content}`, mentions: [fake.bot] });
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

it("a thread is a conversation of its own under its parent channel's rules: answered in the thread, its own !recall and context; a thread of an unserved channel is not heard", async () => {
  const { fake, daemon } = await bridge();
  const inThread = () => fake.sentMessages(GENERAL_THREAD).map((m) => m.content);
  ask(fake, alice, "in the channel");
  await waitFor(() => contents(fake).length === 1, "the channel's answer");
  fake.dispatchMessage({ channelId: GENERAL_THREAD, guildId: GUILD, author: bob, content: "ship on friday?" });
  ask(fake, alice, "in the thread", GENERAL_THREAD);
  await waitFor(() => inThread().length === 1, "the thread's answer");
  expect(inThread()[0]).toBe(`You said: ${CONTEXT_HEADER}\n[bob] ship on friday?\n\nAddressed to you by [alice]:\nin the thread`);
  ask(fake, alice, "!recall", GENERAL_THREAD);
  ask(fake, alice, "!recall");
  await waitFor(() => inThread().length === 2 && contents(fake).length === 2, "both recalls");
  expect(inThread()[1]).toContain("in the thread");
  expect(inThread()[1]).not.toContain("in the channel");
  expect(contents(fake)[1]).toContain("in the channel");
  expect(contents(fake)[1]).not.toContain("in the thread");
  // The parent is not listed: neither is its thread.
  ask(fake, alice, "anyone here?", RANDOM_THREAD);
  ask(fake, alice, "after", GENERAL_THREAD);
  await waitFor(() => inThread().length === 3, "the answer after");
  await daemon.whenIdle();
  expect(fake.sentMessages(RANDOM_THREAD)).toEqual([]);
});
