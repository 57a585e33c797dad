/** The terminal for the shared suite: built through its descriptor on piped streams, the person typing into one. */
import { posix } from "node:path";
import { PassThrough } from "node:stream";
import pino from "pino";
import type { TerminalChannelConfig } from "../../../../daemon/adapters/terminal/config.js";
import { terminalPlatform } from "../../../../daemon/adapters/terminal/platform.js";
import { parseConfig } from "../../../../daemon/config/load.js";
import { systemClock } from "../../../../shared/clock.js";
import { type Feature, type HarnessFactory, logCollector } from "./harness.js";

export const features: readonly Feature[] = ["files", "appends"];

export const harness: HarnessFactory = async () => {
  const config = parseConfig({ service: { apiKey: `svc_org_${"0".repeat(64)}` }, channels: [{ type: "terminal" }] }, {});
  const channel = config.channels[0] as TerminalChannelConfig;
  const input = new PassThrough();
  const output = new PassThrough();
  let written = "";
  output.on("data", (chunk: Buffer) => (written += chunk.toString("utf8")));
  const logs = logCollector();
  const state = new Map<string, unknown>();
  const adapter = await terminalPlatform.create(channel, {
    logger: pino({ level: "trace" }, logs),
    state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
    dataDir: "/nonexistent",
    clock: systemClock,
    maxAttachmentBytes: 1024 * 1024,
    stdin: input,
    stdout: output,
  });
  if (!adapter) throw new Error("the terminal descriptor built no adapter for its own channel");
  return {
    adapter,
    secrets: terminalPlatform.secrets(channel) ?? [],
    logs: logs.text,
    direct: (text) => void input.write(`${text}\n`),
    // One person at one screen: what was printed is the chat.
    shown: () => [written],
    files: () => [...written.matchAll(/📎 (\S+) \(/g)].map((m) => posix.basename(m[1] ?? "")),
    close: async () => void input.end(),
  };
};
