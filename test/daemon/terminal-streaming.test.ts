/**
 * Streamed replies in the terminal chat (`npm start`): the daemon with the
 * terminal adapter on in-memory streams, the emulator on a manual clock.
 */
import { PassThrough } from "node:stream";
import { expect, it, onTestFinished, vi } from "vitest";
import { createTerminalAdapter, REPLY_PREFIX } from "../../daemon/adapters/terminal/index.js";
import type { TerminalChannelConfig } from "../../daemon/adapters/terminal/config.js";
import { createDaemon } from "../../daemon/daemon.js";
import { streamText } from "../../emulator/gateway/model.js";
import { seededRandom } from "../../shared/random.js";
import { startServiceFixture } from "../helpers/bridge.js";

async function terminalBridge(streaming: "off" | "partial") {
  const service = await startServiceFixture("terminal-stream-");
  const config = service.configFor({ type: "terminal", id: "terminal", streaming });
  const channel = config.channels.find((c): c is TerminalChannelConfig => c.type === "terminal")!;
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let out = "";
  stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  const adapter = createTerminalAdapter({ input: stdin, output: stdout, config: channel, terminal: false });
  const daemon = createDaemon({ config, adapters: [adapter], random: seededRandom(5) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { stdin, out: () => out, clock: service.emulator.clock };
}

it("prints the reply as the agent writes it, then the whole answer exactly once on its line", async () => {
  const { stdin, out, clock } = await terminalBridge("partial");
  stdin.write("!stream 2\n");
  // Text before the gateway's clock moved: before the answer completed.
  await vi.waitFor(() => expect(out()).toContain(REPLY_PREFIX));
  const answer = streamText(600);
  expect(out()).not.toContain(answer);
  clock.advance(2000);
  await vi.waitFor(() => expect(out()).toContain(`${REPLY_PREFIX}${answer}\n`));
  expect(out().split(REPLY_PREFIX)).toHaveLength(2); // one reply, not a preview and a copy
});

it('streaming "off" prints the whole reply once it is done, as before', async () => {
  const { stdin, out, clock } = await terminalBridge("off");
  stdin.write("!stream 2\n");
  await vi.waitFor(() => expect(out()).toContain("agent is typing"), { timeout: 10_000 }); // after queue.typingDelayMs
  expect(out()).not.toContain(REPLY_PREFIX);
  const answer = streamText(600);
  // Without `stream: true` the gateway answers the whole text after S seconds of its clock.
  await vi.waitFor(() => {
    clock.advance(500);
    expect(out()).toContain(`${REPLY_PREFIX}${answer}\n`);
  });
  expect(out().split(REPLY_PREFIX)).toHaveLength(2);
});
