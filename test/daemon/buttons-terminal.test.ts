/**
 * Questions in the terminal chat (`npm start`): the emulator's fake model asks
 * with the bridge's tools (`!ask`, `!confirm`), the terminal shows a numbered
 * list, the typed number goes back as the call's output on the same chain, and
 * the agent's next answer is the reply. Real emulator over HTTP, real daemon.
 */
import { PassThrough } from "node:stream";
import OpenAI from "openai";
import { expect, it, onTestFinished, vi } from "vitest";
import { createTerminalAdapter, REPLY_PREFIX } from "../../daemon/adapters/terminal/index.js";
import type { TerminalChannelConfig } from "../../daemon/adapters/terminal/config.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { OpsChat, OpsChats } from "../../shared/schemas/ops-console.js";
import { startServiceFixture } from "../helpers/bridge.js";

async function terminalBridge(channelExtra: Record<string, unknown> = { buttons: { tools: ["choice", "confirm"] } }, withConsole = false) {
  const service = await startServiceFixture("buttons-terminal-");
  const config = service.configFor({ type: "terminal", id: "terminal", streaming: "off", ...channelExtra });
  if (withConsole) config.ops = { ...config.ops, port: 0 };
  const channel = config.channels.find((c): c is TerminalChannelConfig => c.type === "terminal")!;
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let out = "";
  stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  const adapter = createTerminalAdapter({ input: stdin, output: stdout, config: channel, terminal: false });
  const daemon = createDaemon({ config, adapters: [adapter], random: seededRandom(7) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const replies = () => out.split(REPLY_PREFIX).slice(1);
  return { stdin, out: () => out, replies, service, opsUrl: daemon.opsUrl };
}

it.each(["off", "partial"])(
  "a choice (streaming %s): the numbered list is shown, the typed number is the tool's output, the agent's next answer is delivered",
  async (streaming) => {
    const { stdin, replies } = await terminalBridge({ buttons: { tools: ["choice", "confirm"] }, streaming });
    stdin.write("!ask Deploy where? | staging | production\n");
    // Streamed, the agent's words come first and the question with the end of the reply.
    await vi.waitFor(() => expect(replies()[0]).toContain("Deploy where?\n1. staging\n2. production\nReply with a number."));
    expect(replies()).toHaveLength(1);
    expect(replies()[0]).toContain("I need a decision.");
    stdin.write("2\n");
    await vi.waitFor(() => expect(replies()).toHaveLength(2));
    expect(replies()[1]).toMatch(/^Tool call_\w+ returned: production/);
  },
);

it("a confirmation: typed yes-or-no by number or by its word", async () => {
  const { stdin, replies } = await terminalBridge();
  stdin.write("!confirm Send the report to Ann\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(1));
  expect(replies()[0]).toContain("Send the report to Ann\n1. Approve\n2. Deny");
  stdin.write("deny\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(2));
  expect(replies()[1]).toMatch(/returned: denied/);
});

it("a choice that allows free text takes the typed words; a message that is no answer closes the question and goes on", async () => {
  const { stdin, replies } = await terminalBridge();
  stdin.write("!ask Which colour? | red | blue | *\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(1));
  expect(replies()[0]).toContain("Reply with a number, or write your own answer.");
  stdin.write("dark green\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(2));
  expect(replies()[1]).toMatch(/returned: dark green/);

  stdin.write("!ask Deploy where? | staging | production\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(3));
  // Not an option, no free text: the agent is told, and the message goes on to it (the echo answers it).
  stdin.write("hello there\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(4));
  expect(replies()[3]).toContain("hello there");
  // The chain was valid (the output named the call): the conversation goes on.
  stdin.write("!recall\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(5));
});

it("without the tools configured, !ask is the fake model's plain text and nothing waits", async () => {
  const { stdin, replies } = await terminalBridge({});
  stdin.write("!ask Deploy where? | staging | production\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(1));
  stdin.write("2\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(2));
  expect(replies()[1]).not.toContain("returned");
});

it("/stop closes an open question: a later number is no answer, and the agent hears it was stopped", async () => {
  const { stdin, out, replies } = await terminalBridge();
  stdin.write("!ask Deploy where? | staging | production\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(1));
  stdin.write("/stop\n");
  await vi.waitFor(() => expect(out()).toContain("No queued messages were dropped."));
  const before = replies().length;
  stdin.write("2\n");
  await vi.waitFor(() => expect(replies().length).toBeGreaterThan(before));
  // The output said the question was stopped; the "2" went on as the person's message (the echo).
  expect(replies().at(-1)).not.toMatch(/returned: production/);
  expect(replies().at(-1)).toContain("2");
});

it("the operator's console shows the question with the reply that asked it, and the answer by its option", async () => {
  const { stdin, replies, opsUrl } = await terminalBridge(undefined, true);
  stdin.write("!ask Deploy where? | staging | production\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(1));
  stdin.write("2\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(2));
  const { chats } = OpsChats.parse(await (await fetch(`${opsUrl}/ui/api/chats`)).json());
  const key = chats[0]?.key ?? "";
  const chat = OpsChat.parse(await (await fetch(`${opsUrl}/ui/api/chats/${encodeURIComponent(key)}`)).json());
  const [asked, answered] = chat.turns;
  expect(asked?.question).toMatchObject({ text: "Deploy where?", options: ["staging", "production"] });
  expect(answered).toMatchObject({ text: "production", answers: "Deploy where?" });
  expect(answered?.reply).toMatch(/returned: production/);
});

it("the official openai SDK continues the bridge's chain after a round trip: every call was answered by its output", async () => {
  const { stdin, replies, service } = await terminalBridge();
  stdin.write("!confirm Send the report to Ann\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(1));
  stdin.write("1\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(2));
  stdin.write("/whoami\n");
  await vi.waitFor(() => expect(replies()).toHaveLength(3));
  const session = /Session: (\S+)/.exec(replies()[2] ?? "")?.[1];
  expect(session).toBeDefined();
  const key = service.configFor({ type: "terminal" }).service.apiKey;
  const openai = new OpenAI({ apiKey: key, baseURL: `${service.baseUrl}/v1/instances/${service.instanceId}/session/${session}`, maxRetries: 0 });
  // The session's head is the agent's answer to the output; continuing it names every turn so far.
  const recalled = await openai.responses.create({ model: "m", input: "!recall" });
  expect(recalled.output_text).toContain("!confirm Send the report to Ann");
  // And by its id, which the emulator (as OpenAI) refuses while a call of it has no output.
  const next = await openai.responses.create({ model: "m", previous_response_id: recalled.id, input: "thanks" });
  expect(next.output_text).toBe("You said: thanks");
});
