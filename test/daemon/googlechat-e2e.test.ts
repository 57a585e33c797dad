/**
 * The whole chain for Google Chat: an event the fake Google Chat signs and
 * posts goes through the adapter the daemon builds (google-auth-library,
 * @google-apps/chat in REST mode), the access rules, journal, queue and relay
 * to the emulator over real HTTP, and the fake model's answer comes back: in
 * the HTTP answer itself when it is ready within the sync window, through the
 * Chat API otherwise, into the thread the message came from.
 */
import { describe, expect, it } from "vitest";
import { streamText } from "../../emulator/gateway/model.js";
import type { createFakeGoogleChat } from "../fakes/googlechat.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { fakeGoogleChatForTest, startGoogleChatDaemon } from "../helpers/googlechat-setup.js";
import { waitUntil } from "../helpers/wait.js";

const PROJECT = "246813579024";

async function bridge(channel: Record<string, unknown> = {}) {
  const service = await startServiceFixture("googlechat-e2e-");
  const fake = await fakeGoogleChatForTest(PROJECT);
  const daemon = await startGoogleChatDaemon({
    service,
    fake,
    project: PROJECT,
    seed: 7,
    settings: { streaming: "off", access: { users: ["users/alice"], groups: { "spaces/team": {} } }, ...channel },
  });
  return { fake, daemon, service };
}

const bot = (fake: Awaited<ReturnType<typeof createFakeGoogleChat>>, space: string) => fake.messages(space).filter((m) => m.sender.type === "BOT");

describe("google chat through the daemon and the emulator", () => {
  it("answers a DM in the HTTP answer, a space mention in its thread, and nobody else", async () => {
    const { fake, daemon } = await bridge();
    expect(daemon.health().adapters).toEqual({ "googlechat:gc": "connected" });
    const stranger = fake.say({ space: "spaces/dm-bob", user: "users/bob", text: "let me in" });
    const dm = fake.say({ space: "spaces/dm-alice", text: "hello **agent**" });
    const asked = fake.say({ space: "spaces/team", text: "in the space" });
    // The DM's reply is ready well within the window: it is the request's own answer.
    expect(JSON.parse((await dm.answered).body)).toMatchObject({ text: "You said: hello *agent*" });
    await Promise.all([asked.answered, stranger.answered]);
    await waitUntil(() => bot(fake, "spaces/team").length === 1, "the space's reply");
    await daemon.whenIdle();
    expect(bot(fake, "spaces/dm-alice").map((m) => [m.text, m.via])).toEqual([["You said: hello *agent*", "response"]]);
    expect(bot(fake, "spaces/team").map((m) => [m.text, m.thread.name])).toEqual([["You said: in the space", asked.message.thread.name]]);
    // A stranger in a DM is refused by the access rules (a pairing notice at most, never a turn).
    expect(bot(fake, "spaces/dm-bob").some((m) => m.text.startsWith("You said"))).toBe(false);
  });

  it("with no sync window every reply goes through the Chat API, each once", async () => {
    const { fake, daemon } = await bridge({ syncReplyMs: 0 });
    const first = fake.say({ space: "spaces/dm-alice", text: "one" });
    expect(await first.answered).toEqual({ status: 200, body: "{}" });
    fake.say({ space: "spaces/dm-alice", text: "two" });
    await waitUntil(() => bot(fake, "spaces/dm-alice").length === 2, "two replies");
    await daemon.whenIdle();
    expect(bot(fake, "spaces/dm-alice").map((m) => [m.text, m.via])).toEqual([
      ["You said: one", "api"],
      ["You said: two", "api"],
    ]);
  });

  it("the same event posted twice (an answer lost on the way) is one turn, answered once", async () => {
    const { fake, daemon } = await bridge({ syncReplyMs: 0 });
    const said = fake.say({ space: "spaces/dm-alice", text: "only once" });
    await said.answered;
    const { via: _via, ...message } = said.message;
    const again = await fake.post({ type: "MESSAGE", space: { name: "spaces/dm-alice", spaceType: "DIRECT_MESSAGE" }, user: message.sender, message });
    expect(again).toEqual({ status: 200, body: "{}" });
    await waitUntil(() => bot(fake, "spaces/dm-alice").length === 1, "the reply");
    await daemon.whenIdle();
    expect(bot(fake, "spaces/dm-alice").map((m) => m.text)).toEqual(["You said: only once"]);
  });

  it("streams a reply by updating one message through the API", async () => {
    const { fake, daemon, service } = await bridge({ streaming: "partial", minEditIntervalMs: 50 });
    const asked = fake.say({ space: "spaces/team", text: "!stream 3" });
    const answer = streamText(600);
    await waitUntil(() => bot(fake, "spaces/team").length === 1, "the reply started");
    await waitUntil(() => {
      service.emulator.clock.advance(250);
      return bot(fake, "spaces/team").at(-1)?.text === answer;
    }, "the whole answer");
    await daemon.whenIdle();
    expect(bot(fake, "spaces/team").map((m) => [m.text, m.thread.name])).toEqual([[answer, asked.message.thread.name]]);
    expect(fake.calls().filter((c) => c.startsWith("PUT ")).length).toBeGreaterThan(0);
  });
});
