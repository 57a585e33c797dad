/**
 * Questions with buttons on Google Chat, through the daemon and the emulator:
 * the fake model asks with the bridge's tools, the Chat client posts a cards v2
 * message with a button per option, a tap comes back as a signed CARD_CLICKED
 * event and goes to the agent as the call's output; the card is replaced by
 * who chose what. A double tap and someone else's tap are told so, privately.
 */
import { describe, expect, it } from "vitest";
import type { FakeGoogleChat } from "../fakes/googlechat.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { fakeGoogleChatForTest, startGoogleChatDaemon } from "../helpers/googlechat-setup.js";
import { waitUntil } from "../helpers/wait.js";

const PROJECT = "864209753186";
const DM = "spaces/dm-alice";
const SPACE = "spaces/team";

async function bridge() {
  const service = await startServiceFixture("googlechat-buttons-");
  const fake = await fakeGoogleChatForTest(PROJECT);
  await startGoogleChatDaemon({
    service,
    fake,
    project: PROJECT,
    seed: 11,
    settings: {
      streaming: "off",
      syncReplyMs: 0,
      access: { users: ["users/alice", "users/bob"], groups: { [SPACE]: {} } },
      buttons: { tools: ["choice", "confirm"] },
    },
  });
  return fake;
}

const bot = (fake: FakeGoogleChat, space: string) => fake.messages(space).filter((m) => m.sender.type === "BOT");
const questionIn = (fake: FakeGoogleChat, space: string) => waitUntil(() => bot(fake, space).find((m) => m.cardsV2?.length), "the question");
const buttons = (fake: FakeGoogleChat, space: string, name: string) =>
  (fake.messages(space).find((m) => m.name === name)?.cardsV2 ?? []).flatMap((c) =>
    (c.card?.sections ?? []).flatMap((s) => (s.widgets ?? []).flatMap((w) => (w.buttonList?.buttons ?? []).map((b) => b.text))),
  );

describe("Google Chat buttons", () => {
  it("a choice: a card with a button per option, the tap the agent's answer, the card replaced by who chose what", async () => {
    const fake = await bridge();
    fake.say({ space: DM, text: "!ask Deploy where? | staging | production" });
    const question = await questionIn(fake, DM);
    expect(buttons(fake, DM, question.name)).toEqual(["staging", "production"]);
    expect((await fake.tap(question.name, 1)).status).toBe(200);
    await waitUntil(() => bot(fake, DM).find((m) => /returned: production/.test(m.text)), "the agent's answer");
    await waitUntil(() => buttons(fake, DM, question.name).length === 0, "the buttons gone");
    expect(fake.messages(DM).find((m) => m.name === question.name)?.text).toMatch(/^Deploy where\?\nproduction: chosen by Alice/);
  });

  it("a double tap is one answer; the second is told privately", async () => {
    const fake = await bridge();
    fake.say({ space: SPACE, text: "!confirm Send the report to Ann" });
    const question = await questionIn(fake, SPACE);
    const first = await fake.tap(question.name, 0);
    const second = await fake.tap(question.name, 0);
    expect(first.body).toBe("{}");
    expect(JSON.parse(second.body)).toMatchObject({ text: "Already answered.", privateMessageViewer: { name: "users/alice" } });
    await waitUntil(() => bot(fake, SPACE).find((m) => /returned: approved/.test(m.text)), "the agent's answer");
    expect(bot(fake, SPACE).filter((m) => /returned:/.test(m.text))).toHaveLength(1);
  });

  it("in a space only the asker may answer: someone else's tap is refused to them alone", async () => {
    const fake = await bridge();
    fake.say({ space: SPACE, text: "!ask Deploy where? | staging | production" });
    const question = await questionIn(fake, SPACE);
    const bobs = await fake.tap(question.name, 0, "users/bob");
    expect(JSON.parse(bobs.body)).toMatchObject({ text: "This question is not yours to answer.", privateMessageViewer: { name: "users/bob" } });
    expect(bot(fake, SPACE).some((m) => /returned:/.test(m.text))).toBe(false);
    await fake.tap(question.name, 0);
    await waitUntil(() => bot(fake, SPACE).find((m) => /returned: staging/.test(m.text)), "alice's answer");
  });
});
