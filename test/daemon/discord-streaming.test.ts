/**
 * Streamed replies on Discord, end to end: the fake's gateway and REST API
 * (real discord.js), the daemon, the emulator on a manual clock (the gateway's
 * `!stream S` moves only when the test advances it). The daemon and the fake
 * share a second manual clock (`time`), moved on while the test waits: the
 * one-second edit pace and Discord's retry_after are kept exactly, in daemon
 * time, without waiting for them in real time.
 */
import { expect, it, onTestFinished } from "vitest";
import { createDaemon } from "../../daemon/daemon.js";
import { splitReply } from "../../daemon/core/chunking.js";
import { streamText } from "../../emulator/gateway/model.js";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, type FakeDiscord, type FakeUser } from "../fakes/discord.js";
import { advanceUntil } from "../helpers/advance-until.js";
import { startServiceFixture } from "../helpers/bridge.js";

const TOKEN = "MTA0NjY5.e2e-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const alice: FakeUser = { id: "700000000000000001", username: "alice" };

async function bridge() {
  const service = await startServiceFixture("discord-stream-");
  const time = createManualClock();
  const fake = await createFakeDiscord({
    token: TOKEN,
    now: () => time.now(),
    guilds: [{ id: GUILD, name: "Test Guild", channels: [{ id: GENERAL, name: "general" }] }],
  });
  onTestFinished(() => fake.close());
  const config = service.configFor({ type: "discord", id: "dc", token: TOKEN, api: fake.apiBase, access: { users: [alice.id] } });
  const daemon = createDaemon({ config, clock: time, random: seededRandom(7) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  /** Waits for `check`, moving the daemon's clock on meanwhile. */
  const waitFor = <T>(check: () => T | undefined | null | false, label: string, timeout?: number) =>
    advanceUntil(time, check, label, timeout ? { timeout } : {});
  return { fake, daemon, clock: service.emulator.clock, waitFor };
}

const shownIn = (fake: FakeDiscord, channel: string) => fake.shownMessages(channel);
const same = (a: string[], b: string[]) => JSON.stringify(a) === JSON.stringify(b);

it("!stream 6 in a DM: first text before the gateway completes, one message edited in place at most once a second, ending as the answer exactly", async () => {
  const { fake, clock, waitFor } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.dispatchDirectMessage(alice, "!stream 6");
  // The emulator's clock has not moved: the gateway has sent its first delta, not its completion.
  const first = await waitFor(() => shownIn(fake, dm)[0], "the first text");
  const answer = streamText(600);
  expect(first.versions[0]!.content.length).toBeLessThan(answer.length);

  clock.advance(3000);
  await waitFor(() => (shownIn(fake, dm)[0]?.versions.length ?? 0) >= 2, "an edit");
  clock.advance(3000);
  const final = splitReply(answer, 2000);
  await waitFor(
    () =>
      same(
        shownIn(fake, dm).map((m) => m.content),
        final,
      ),
    "the final text",
  );
  expect(shownIn(fake, dm).map((m) => m.id)).toEqual([first.id]);
  expect(fake.sentMessages(dm)).toHaveLength(1);
  const times = shownIn(fake, dm)
    .flatMap((m) => m.versions.map((v) => v.at))
    .sort((a, b) => a - b);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(950);
});

it("a 9,000-character streamed reply ends as exactly the non-streamed split, one message per chunk", async () => {
  const { fake, clock, waitFor } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.dispatchDirectMessage(alice, "!stream 2 9000");
  await waitFor(() => shownIn(fake, dm)[0], "the first text");
  clock.advance(2000);
  const final = splitReply(streamText(9000), 2000);
  expect(final.length).toBeGreaterThanOrEqual(5);
  await waitFor(
    () =>
      same(
        shownIn(fake, dm).map((m) => m.content),
        final,
      ),
    "the final messages",
    30_000,
  );
  expect(fake.sentMessages(dm)).toHaveLength(final.length);
});

it("an edit answered 429 is retried after Discord's retry_after, and the message still ends as the answer, once", async () => {
  const { fake, clock, waitFor } = await bridge();
  const dm = fake.dmChannelFor(alice);
  fake.setEditInterval(2500);
  fake.dispatchDirectMessage(alice, "!stream 4");
  const first = await waitFor(() => shownIn(fake, dm)[0], "the first text");
  clock.advance(1000);
  await waitFor(() => (shownIn(fake, dm)[0]?.versions.length ?? 0) >= 2, "the first edit");
  clock.advance(3000);
  const final = splitReply(streamText(600), 2000);
  await waitFor(
    () =>
      same(
        shownIn(fake, dm).map((m) => m.content),
        final,
      ),
    "the final text",
    20_000,
  );
  expect(shownIn(fake, dm).map((m) => m.id)).toEqual([first.id]);
  // Rate limited, not refused: no degraded second message.
  expect(fake.sentMessages(dm)).toHaveLength(1);
  // The 429 did happen: the second edit came a daemon second after the first, inside the fake's 2.5 s.
  expect(fake.rateLimitedEdits()).toBeGreaterThanOrEqual(1);
});
