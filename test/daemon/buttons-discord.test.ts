/**
 * Questions with buttons on Discord: the emulator's fake model asks with the
 * bridge's tools, discord.js's real client shows message components on the
 * project's fake Discord (which holds Discord's component rules and its
 * interaction deadline: one answer within 3 s), a tap comes back as an
 * interaction, is answered once, and goes to the agent as the call's output;
 * the buttons go and the message says who chose what. A double tap and
 * someone else's tap are told so only to them (ephemeral), and a core slower
 * than the deadline still gets the interaction answered in time.
 */
import pino from "pino";
import { expect, it, onTestFinished, vi } from "vitest";
import { TAP_DEADLINE_MS } from "../../daemon/adapters/discord/buttons.js";
import { discordChannelSchema } from "../../daemon/adapters/discord/config.js";
import { createDiscordAdapter } from "../../daemon/adapters/discord/index.js";
import { createDaemon } from "../../daemon/daemon.js";
import type { AcceptOutcome, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { seededRandom } from "../../shared/random.js";
import { componentProblem, createFakeDiscord, waitFor, type FakeDiscord, type FakeUser } from "../fakes/discord.js";
import { testSink } from "../fakes/sink.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";

const TOKEN = "MTA0NjY5.buttons-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const GENERAL_THREAD = "800000000000000012";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };
const bob: FakeUser = { id: "700000000000000002", username: "bob" };

async function bridge(over: { groups?: Record<string, object>; buttons?: Record<string, unknown>; clock?: ReturnType<typeof createSteppableClock> } = {}) {
  const service = await startServiceFixture("buttons-discord-");
  const fake = await createFakeDiscord({
    token: TOKEN,
    guilds: [
      {
        id: GUILD,
        name: "Guild",
        channels: [{ id: GENERAL, name: "general" }],
        threads: [{ id: GENERAL_THREAD, name: "release plans", parentId: GENERAL }],
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
    groupContext: { enabled: false },
    access: { users: [alice.id, bob.id], groups: over.groups ?? { [GENERAL]: {} } },
    buttons: over.buttons ?? { tools: ["choice", "confirm"] },
  });
  const daemon = createDaemon({ config, random: seededRandom(5), ...(over.clock ? { clock: over.clock } : {}) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { fake };
}

const contents = (fake: FakeDiscord, channelId: string) => fake.shownMessages(channelId).map((m) => m.content);
const questionIn = (fake: FakeDiscord, channelId: string) =>
  waitFor(() => fake.sentMessages(channelId).find((m) => fake.buttonsOn(m.id).length > 0), "the question");

it("a choice: buttons, a tap answered at once, the agent's next answer, the buttons replaced by who chose what", async () => {
  const { fake } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.dispatchDirectMessage(alice, "!ask Deploy where? | staging | production");
  const question = await questionIn(fake, dm);
  expect(question.content).toBe("Deploy where?");
  expect(fake.buttonsOn(question.id)).toEqual(["staging", "production"]);
  expect(componentProblem(question.body.components)).toBeUndefined();

  const { interactionId } = fake.tapButton({ messageId: question.id, user: alice, index: 1 });
  await waitFor(() => contents(fake, dm).find((t) => /returned: production/.test(t)), "the agent's answer");
  // Answered silently (a deferred update), in time: the message itself shows the choice.
  expect(fake.interactionAnswers(interactionId)).toMatchObject([{ kind: "callback", type: 6 }]);
  await waitFor(() => fake.buttonsOn(question.id).length === 0 || undefined, "the buttons gone");
  expect(contents(fake, dm)).toContain("Deploy where?\nproduction: chosen by alice");
  expect(contents(fake, dm).filter((t) => /returned:/.test(t))).toHaveLength(1);
});

it("a double tap before the answer is one answer", async () => {
  const { fake } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.dispatchDirectMessage(alice, "!confirm Send the report to Ann");
  const question = await questionIn(fake, dm);
  const first = fake.tapButton({ messageId: question.id, user: alice, index: 0 });
  const second = fake.tapButton({ messageId: question.id, user: alice, index: 0 });
  await waitFor(() => contents(fake, dm).find((t) => /returned: approved/.test(t)), "the agent's answer");
  await waitFor(
    () => (fake.interactionAnswers(first.interactionId).length && fake.interactionAnswers(second.interactionId).length) || undefined,
    "both answered",
  );
  const answers = [first, second].map((t) => fake.interactionAnswers(t.interactionId)[0]);
  expect(answers.filter((a) => a?.type === 6)).toHaveLength(1);
  expect(answers.filter((a) => a?.content === "Already answered." && a.ephemeral)).toHaveLength(1);
  expect(contents(fake, dm).filter((t) => /returned:/.test(t))).toHaveLength(1);
});

it("in a guild channel only the asker may answer: someone else's tap is refused to them alone", async () => {
  const { fake } = await bridge();
  fake.dispatchMessage({
    channelId: GENERAL,
    guildId: GUILD,
    author: alice,
    content: `<@${fake.bot.id}> !ask Deploy where? | staging | production`,
    mentions: [fake.bot],
  });
  const question = await questionIn(fake, GENERAL);
  const bobs = fake.tapButton({ messageId: question.id, user: bob, index: 0 });
  await waitFor(() => fake.interactionAnswers(bobs.interactionId).length > 0 || undefined, "bob's tap answered");
  expect(fake.interactionAnswers(bobs.interactionId)).toMatchObject([{ type: 4, content: "This question is not yours to answer.", ephemeral: true }]);
  expect(contents(fake, GENERAL).some((t) => /returned:/.test(t))).toBe(false);
  fake.tapButton({ messageId: question.id, user: alice, index: 0 });
  await waitFor(() => contents(fake, GENERAL).find((t) => /returned: staging/.test(t)), "alice's answer");
});

it("a question in a channel whose guild is listed expires: the agent is told there was no answer", async () => {
  // The expiry is handed to intake like a tap, as the chat the question was asked in: the guild's settings must still apply to it.
  const clock = createSteppableClock();
  const { fake } = await bridge({ groups: { [GUILD]: {} }, buttons: { tools: ["choice"], expireMinutes: 1 }, clock });
  fake.dispatchMessage({
    channelId: GENERAL,
    guildId: GUILD,
    author: alice,
    content: `<@${fake.bot.id}> !ask Deploy where? | staging | production`,
    mentions: [fake.bot],
  });
  const question = await questionIn(fake, GENERAL);
  await vi.waitFor(() => expect(clock.delays().some((d) => d > 55_000 && d <= 60_000)).toBe(true));
  clock.advance(60_000);
  await waitFor(() => contents(fake, GENERAL).find((t) => /returned: No answer: the person did not answer in time/.test(t)), "the agent told");
  await waitFor(() => fake.buttonsOn(question.id).length === 0 || undefined, "the buttons gone");
});

it("a question in a thread listed by its own id (as before the one thread rule) expires: the agent is told there was no answer", async () => {
  // The expiry names the thread as its messages do, the id it had before the rule too: the thread's own entry applies to it.
  const clock = createSteppableClock();
  const { fake } = await bridge({ groups: { [GENERAL_THREAD]: {} }, buttons: { tools: ["choice"], expireMinutes: 1 }, clock });
  fake.dispatchMessage({
    channelId: GENERAL_THREAD,
    guildId: GUILD,
    author: alice,
    content: `<@${fake.bot.id}> !ask Deploy where? | staging | production`,
    mentions: [fake.bot],
  });
  const question = await questionIn(fake, GENERAL_THREAD);
  await vi.waitFor(() => expect(clock.delays().some((d) => d > 55_000 && d <= 60_000)).toBe(true));
  clock.advance(60_000);
  await waitFor(() => contents(fake, GENERAL_THREAD).find((t) => /returned: No answer: the person did not answer in time/.test(t)), "the agent told");
  await waitFor(() => fake.buttonsOn(question.id).length === 0 || undefined, "the buttons gone");
});

it("a core slower than Discord's deadline: the tap is answered in time, and a refusal follows privately", async () => {
  const fake = await createFakeDiscord({ token: TOKEN, guilds: [] });
  onTestFinished(() => fake.close());
  const clock = createSteppableClock();
  const adapter = createDiscordAdapter(
    { ...discordChannelSchema.parse({ type: "discord", token: TOKEN, api: fake.apiBase, access: { mode: "open" } }), id: "dc" },
    { logger: pino({ level: "silent" }), state: { get: () => undefined, set: async () => {} }, dataDir: "/nonexistent", clock, maxAttachmentBytes: 1024 },
    { identifyThrottler: { waitForIdentify: async () => undefined }, random: seededRandom("slow"), backoffInitialMs: 20 },
  );
  let release!: (outcome: AcceptOutcome) => void;
  const taps: InboundMessage[] = [];
  await adapter.start(
    testSink({
      accept: (message) => {
        if (!message.answers) return undefined;
        taps.push(message);
        return new Promise<AcceptOutcome>((resolve) => {
          release = resolve;
        });
      },
    }),
  );
  onTestFinished(() => adapter.stop());
  const dm = fake.dmChannelFor(alice);
  const receipt = await adapter.buttons!.ask(
    { platform: "discord", accountId: "dc", chatId: dm, chatType: "direct" },
    { id: "q1", text: "Deploy?", options: ["yes", "no"], allowText: false },
  );
  const { interactionId } = fake.tapButton({ messageId: receipt!.messageId!, user: alice, index: 0 });
  await vi.waitFor(() => expect(taps).toHaveLength(1));
  // The core has not answered; at the deadline the interaction is acknowledged all the same.
  await vi.waitFor(() => expect(clock.delays()).toContain(TAP_DEADLINE_MS));
  expect(fake.interactionAnswers(interactionId)).toEqual([]);
  clock.advance(TAP_DEADLINE_MS);
  await waitFor(() => fake.interactionAnswers(interactionId).length > 0 || undefined, "the deferred answer");
  expect(fake.interactionAnswers(interactionId)).toMatchObject([{ kind: "callback", type: 6 }]);
  release({ status: "refused", reason: "closed", acknowledge: true });
  await waitFor(() => fake.interactionAnswers(interactionId).length > 1 || undefined, "the follow-up");
  expect(fake.interactionAnswers(interactionId)[1]).toMatchObject({ kind: "followup", content: "Already answered.", ephemeral: true });
});

it("the fake holds Discord's component rules", () => {
  const row = (n: number, id = (i: number) => `b${i}`) => ({
    type: 1,
    components: Array.from({ length: n }, (_, i) => ({ type: 2, style: 1, label: "x", custom_id: id(i) })),
  });
  expect(componentProblem([row(5)])).toBeUndefined();
  expect(componentProblem([row(6)])).toMatch(/between 1 and 5/);
  expect(componentProblem(Array.from({ length: 6 }, () => row(1)))).toMatch(/5 or fewer/);
  expect(componentProblem([row(2, () => "same")])).toMatch(/duplicated/);
  expect(componentProblem([row(1, () => "x".repeat(101))])).toMatch(/1 and 100/);
  expect(componentProblem([{ type: 1, components: [{ type: 2, style: 1, label: "y".repeat(81), custom_id: "a" }] }])).toMatch(/80 or fewer/);
});
