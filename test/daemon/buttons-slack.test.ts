/**
 * Questions with buttons on Slack, both ways Slack delivers a tap: the
 * emulator's fake model asks with the bridge's tools, the real Web API client
 * posts Block Kit buttons to the project's fake Slack (which holds Block Kit's
 * limits), a tap comes back as a signed `block_actions` payload (HTTP
 * interactivity) or an `interactive` envelope (Socket Mode), is acknowledged
 * within Slack's 3 s, and goes to the agent as the call's output; the buttons
 * go and the message says who chose what. A double tap and someone else's
 * tap are told so privately through the tap's `response_url`.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it, onTestFinished } from "vitest";
import type { SlackChannelConfig } from "../../daemon/adapters/slack/config.js";
import { createSlackAdapter } from "../../daemon/adapters/slack/index.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { blocksProblem, createFakeSlack, waitFor, type FakeSlack } from "../fakes/slack.js";
import { startServiceFixture } from "../helpers/bridge.js";

const BOT_TOKEN = "xoxb-1111-2222-buttonsBotTokenThatMustStaySecret";
const APP_TOKEN = "xapp-1-A0APP00001-3333-buttonsAppTokenSecret";
const SIGNING_SECRET = "buttonsSigningSecret0123456789ab";
const ALICE = "U0ALICE001";
const BOB = "U0BOB00001";
const DM = "D0ALICE001";
const GENERAL = "C0GENERAL1";

async function bridge(mode: "http" | "socket") {
  const service = await startServiceFixture(`buttons-slack-${mode}-`);
  const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode, postBurst: 50 });
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "slack",
    id: "sl",
    botToken: BOT_TOKEN,
    mode,
    ...(mode === "http" ? { signingSecret: SIGNING_SECRET, http: { port: 0 } } : { appToken: APP_TOKEN }),
    api: fake.apiBase,
    streaming: "off",
    groupContext: { enabled: false },
    access: { users: [ALICE, BOB], groups: { [GENERAL]: {} } },
    buttons: { tools: ["choice", "confirm"] },
  });
  let endpoint = "";
  const daemon = createDaemon({
    config,
    random: seededRandom(11),
    createAdapter: (c, deps) =>
      c.type === "slack"
        ? Promise.resolve(
            createSlackAdapter(c as SlackChannelConfig, deps, {
              onListening: (url) => {
                endpoint = `${url}/slack/events`;
                fake.setRequestUrl(endpoint);
              },
            }),
          )
        : undefined,
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { fake, endpoint: () => endpoint };
}

const texts = (fake: FakeSlack, channel: string) => fake.messages(channel).map((m) => m.text);
const questionIn = (fake: FakeSlack, channel: string) => waitFor(() => fake.messages(channel).find((m) => m.blocks?.length), "the question");

describe.each(["http", "socket"] as const)("Slack buttons (%s)", (mode) => {
  it("a choice: Block Kit buttons, a tap acknowledged in time, the agent's next answer, the buttons replaced by who chose what", async () => {
    const { fake } = await bridge(mode);
    fake.say({ user: ALICE, channel: DM, text: "!ask Deploy where? | staging | production" });
    const question = await questionIn(fake, DM);
    expect(blocksProblem(question.blocks)).toBeUndefined();
    expect(fake.buttonsOn(DM, question.ts)).toEqual(["staging", "production"]);
    const tap = await fake.tap({ channel: DM, ts: question.ts, user: ALICE, index: 1 });
    expect(tap.status).toBe(200);
    await waitFor(() => texts(fake, DM).find((t) => /returned: production/.test(t)), "the agent's answer");
    await waitFor(() => fake.buttonsOn(DM, question.ts).length === 0 || undefined, "the buttons gone");
    // The name Slack's payload gives the person (the fake's: the id in lower case).
    expect(fake.messages(DM).find((m) => m.ts === question.ts)?.text).toBe("Deploy where?\nproduction: chosen by u0alice001");
    // Nothing private to say to the one who answered: the message says it.
    expect(fake.tapResponses(tap.id)).toEqual([]);
  });

  it("a double tap is one answer; the second is told privately", async () => {
    const { fake } = await bridge(mode);
    fake.say({ user: ALICE, channel: DM, text: "!confirm Send the report to Ann" });
    const question = await questionIn(fake, DM);
    const [first, second] = await Promise.all([0, 0].map((index) => fake.tap({ channel: DM, ts: question.ts, user: ALICE, index })));
    await waitFor(() => texts(fake, DM).find((t) => /returned: approved/.test(t)), "the agent's answer");
    const told = await waitFor(() => [first!, second!].flatMap((t) => fake.tapResponses(t.id)).at(0), "the private answer");
    expect(told).toEqual({ text: "Already answered.", ephemeral: true, replaceOriginal: false });
    expect(texts(fake, DM).filter((t) => /returned:/.test(t))).toHaveLength(1);
  });

  it("in a channel only the asker may answer: someone else's tap is refused to them alone", async () => {
    const { fake } = await bridge(mode);
    fake.say({ user: ALICE, channel: GENERAL, text: `<@${fake.bot.userId}> !ask Deploy where? | staging | production` });
    const question = await questionIn(fake, GENERAL);
    const bobs = await fake.tap({ channel: GENERAL, ts: question.ts, user: BOB, index: 0 });
    expect(await waitFor(() => fake.tapResponses(bobs.id)[0], "bob told")).toMatchObject({ text: "This question is not yours to answer.", ephemeral: true });
    expect(texts(fake, GENERAL).some((t) => /returned:/.test(t))).toBe(false);
    await fake.tap({ channel: GENERAL, ts: question.ts, user: ALICE, index: 0 });
    await waitFor(() => texts(fake, GENERAL).find((t) => /returned: staging/.test(t)), "alice's answer");
  });
});

it("a tap not signed with the app's signing secret is refused and never reaches the agent", async () => {
  const { fake, endpoint } = await bridge("http");
  fake.say({ user: ALICE, channel: DM, text: "!ask Deploy where? | staging | production" });
  const question = await questionIn(fake, DM);
  const payload = {
    type: "block_actions",
    user: { id: ALICE },
    container: { channel_id: DM, message_ts: question.ts },
    trigger_id: "1.forged",
    actions: [{ action_id: "q:x:1" }],
  };
  const raw = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const at = String(Math.floor(Date.now() / 1000));
  const forged = await fetch(endpoint(), {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-request-timestamp": at,
      "x-slack-signature": `v0=${createHmac("sha256", "not-the-secret").update(`v0:${at}:${raw}`).digest("hex")}`,
    },
    body: raw,
  });
  expect(forged.status).toBe(401);
  expect(fake.buttonsOn(DM, question.ts)).toEqual(["staging", "production"]);
});

it("the fake holds Block Kit's limits", () => {
  const actions = (n: number, id = (i: number) => `a${i}`) => [
    { type: "actions", elements: Array.from({ length: n }, (_, i) => ({ type: "button", action_id: id(i), text: { type: "plain_text", text: "x" } })) },
  ];
  expect(blocksProblem(actions(25))).toBeUndefined();
  expect(blocksProblem(actions(26))).toMatch(/1 to 25/);
  expect(blocksProblem(actions(2, () => "same"))).toMatch(/unique/);
  expect(blocksProblem([{ type: "actions", elements: [{ type: "button", action_id: "a", text: { type: "plain_text", text: "y".repeat(76) } }] }])).toMatch(
    /75/,
  );
  expect(blocksProblem(Array.from({ length: 51 }, () => ({ type: "divider" })))).toMatch(/50/);
});
