/**
 * The bridge's commands in Discord's `/` menu: registered for the bot's
 * application when it connects (within Discord's rules for commands), and a
 * person's use of one deferred at once (Discord's 3 s) and answered in place:
 * the core's answer replaces the deferred response. Real discord.js client,
 * the project's fake Discord, a real emulator and daemon.
 */
import { expect, it, onTestFinished } from "vitest";
import { DISCORD_COMMANDS } from "../../daemon/adapters/discord/commands.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { commandsProblem, createFakeDiscord, waitFor, type FakeUser } from "../fakes/discord.js";
import { startServiceFixture } from "../helpers/bridge.js";

const TOKEN = "MTA0NjY5.commands-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };
const stranger: FakeUser = { id: "700000000000000066", username: "stranger" };

async function bridge() {
  const service = await startServiceFixture("discord-commands-");
  const fake = await createFakeDiscord({ token: TOKEN, guilds: [{ id: GUILD, name: "Guild", channels: [{ id: GENERAL, name: "general" }] }] });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "discord",
    id: "dc",
    token: TOKEN,
    api: fake.apiBase,
    streaming: "off",
    groupContext: { enabled: false },
    access: { users: [alice.id], owners: [alice.id], groups: { [GENERAL]: {} } },
  });
  const daemon = createDaemon({ config, random: seededRandom(9) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  await waitFor(() => fake.commands().length > 0 || undefined, "the commands registered");
  return { fake };
}

it("registers the bridge's commands, within Discord's rules", async () => {
  expect(commandsProblem(DISCORD_COMMANDS)).toBeUndefined();
  const { fake } = await bridge();
  expect(fake.commands()).toEqual(expect.arrayContaining(["new", "status", "stop", "queue", "whoami", "approve", "link", "unlink", "help"]));
});

it("a command used in a DM is deferred at once and answered in place", async () => {
  const { fake } = await bridge();
  const dm = fake.dmChannelFor(alice);
  const { interactionId } = fake.useCommand({ channelId: dm, user: alice, name: "whoami" });
  await waitFor(() => fake.interactionAnswers(interactionId).length > 0 || undefined, "the interaction answered");
  expect(fake.interactionAnswers(interactionId)).toMatchObject([{ kind: "callback", type: 5 }]);
  const answered = await waitFor(() => {
    const response = fake.interactionResponse(interactionId);
    return response && !response.loading ? response : undefined;
  }, "the answer in place");
  expect(answered.content).toContain(alice.id);
  // Nothing else was posted: the answer is the command's response.
  expect(fake.sentMessages(dm)).toEqual([]);
});

it("a command with an option in a guild channel: /queue collect", async () => {
  const { fake } = await bridge();
  const { interactionId } = fake.useCommand({ channelId: GENERAL, user: alice, name: "queue", options: { mode: "collect" } });
  const answered = await waitFor(() => {
    const response = fake.interactionResponse(interactionId);
    return response && !response.loading ? response : undefined;
  }, "the answer in place");
  expect(answered.content.toLowerCase()).toContain("collect");
});

it("a stranger's command is answered in place with the refusal, and reaches no agent", async () => {
  const { fake } = await bridge();
  const dm = fake.dmChannelFor(stranger);
  const { interactionId } = fake.useCommand({ channelId: dm, user: stranger, name: "status" });
  const answered = await waitFor(() => {
    const response = fake.interactionResponse(interactionId);
    return response && !response.loading ? response : undefined;
  }, "the refusal in place");
  expect(answered.content).toBe("The bridge does not take commands from you here.");
  expect(fake.sentMessages(dm)).toEqual([]);
});
