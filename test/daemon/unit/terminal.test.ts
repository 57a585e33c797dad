import { testSink } from "../../fakes/sink.js";
import { PassThrough } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { createTerminalAdapter } from "../../../daemon/adapters/terminal/index.js";
import { translateMessage } from "../../../daemon/adapters/terminal/inbound.js";
import { parseConfig } from "../../../daemon/config/load.js";
import type { TerminalChannelConfig } from "../../../daemon/adapters/terminal/config.js";
import type { AdapterStatusEvent, ChatTarget, InboundMessage, InboundSink } from "../../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../../shared/clock.js";

function terminalConfig(raw: Record<string, unknown> = {}): TerminalChannelConfig {
  const cfg = parseConfig({ service: { apiKey: `svc_org_${"0".repeat(64)}` }, channels: [{ type: "terminal", ...raw }] }, {});
  const ch = cfg.channels[0];
  if (ch?.type !== "terminal") throw new Error("expected a terminal channel");
  return ch;
}

function setup(opts: { terminal?: boolean; accept?: (m: InboundMessage) => Promise<void>; config?: Record<string, unknown> } = {}) {
  const input = new PassThrough();
  const output = new PassThrough();
  let written = "";
  output.on("data", (d: Buffer) => (written += d.toString("utf8")));
  const clock = createManualClock();
  const received: InboundMessage[] = [];
  const statuses: AdapterStatusEvent["state"][] = [];
  const sink: InboundSink = testSink({
    accept: (m) => {
      received.push(m);
      return opts.accept ? opts.accept(m) : undefined;
    },
    status: (e) => void statuses.push(e.state),
  });
  const adapter = createTerminalAdapter({
    input,
    output,
    config: terminalConfig(opts.config),
    clock,
    ...(opts.terminal !== undefined ? { terminal: opts.terminal } : {}),
    onInterrupt: () => {},
  });
  return { input, output, adapter, sink, received, statuses, clock, out: () => written };
}

const target: ChatTarget = { platform: "terminal", accountId: "terminal", chatId: "local", chatType: "direct" };

describe("terminal adapter", () => {
  it("turns each non-empty piped line into a direct message from the local user", async () => {
    const t = setup({ config: { userId: "me", userName: "Me" } });
    await t.adapter.start(t.sink);
    expect(t.statuses).toEqual(["starting", "connected"]);
    t.input.write("hello there\n\n   \n  /new  \r\nlast line without newline");
    t.input.end();
    await vi.waitFor(() => expect(t.statuses).toContain("stopped"));
    expect(t.received.map((m) => m.text)).toEqual(["hello there", "/new", "last line without newline"]);
    const [first] = t.received;
    expect(first).toMatchObject({
      platform: "terminal",
      accountId: "terminal",
      chatId: "me",
      chatType: "direct",
      userId: "me",
      userName: "Me",
      sentAt: t.clock.now(),
    });
    expect(new Set(t.received.map((m) => m.messageId)).size).toBe(3);
    // Piped input gets no prompt and no escape codes.
    expect(t.out()).toBe("");
  });

  it("gives message ids that differ between runs", async () => {
    const a = setup();
    await a.adapter.start(a.sink);
    a.input.end("x\n");
    await vi.waitFor(() => expect(a.received).toHaveLength(1));
    const b = setup();
    b.clock.advance(1000);
    await b.adapter.start(b.sink);
    b.input.end("x\n");
    await vi.waitFor(() => expect(b.received).toHaveLength(1));
    expect(a.received[0]?.messageId).not.toBe(b.received[0]?.messageId);
  });

  it("takes lines typed while earlier ones are still being accepted, and stops only after all are", async () => {
    const releases: (() => void)[] = [];
    const t = setup({ accept: () => new Promise<void>((resolve) => releases.push(resolve)) });
    await t.adapter.start(t.sink);
    t.input.write("one\n");
    t.input.write("two\n");
    await vi.waitFor(() => expect(t.received.map((m) => m.text)).toEqual(["one", "two"]));
    t.input.end();
    await new Promise((r) => setImmediate(r));
    expect(t.statuses).not.toContain("stopped");
    for (const release of releases) release();
    await vi.waitFor(() => expect(t.statuses.at(-1)).toBe("stopped"));
  });

  it("prints replies, and the typing line once per pending reply", async () => {
    const t = setup();
    await t.adapter.start(t.sink);
    await t.adapter.sendTyping(target);
    await t.adapter.sendTyping(target);
    await t.adapter.send(target, "first answer\nsecond line", { format: "markdown" });
    await t.adapter.sendTyping(target);
    await t.adapter.send(target, "again", { format: "plain" });
    expect(t.out()).toBe("agent is typing…\nagent> first answer\nsecond line\nagent is typing…\nagent> again\n");
  });

  it("tells the person when a message could not be taken", async () => {
    const t = setup({ accept: () => Promise.reject(new Error("queue full")) });
    await t.adapter.start(t.sink);
    t.input.write("hi\n");
    await vi.waitFor(() => expect(t.out()).toContain("(message not taken: queue full; please send it again)"));
  });

  it("stops idempotently, ignoring input afterwards, with one stopped event", async () => {
    const t = setup();
    await t.adapter.start(t.sink);
    await t.adapter.stop();
    await t.adapter.stop();
    t.input.write("late\n");
    await new Promise((r) => setImmediate(r));
    expect(t.received).toEqual([]);
    expect(t.statuses).toEqual(["starting", "connected", "stopped"]);
    await expect(t.adapter.start(t.sink)).rejects.toThrow(/already started/);
  });

  it("still prints a reply after input EOF", async () => {
    const t = setup();
    await t.adapter.start(t.sink);
    t.input.end("question\n");
    await vi.waitFor(() => expect(t.statuses).toContain("stopped"));
    await t.adapter.send(target, "answer", { format: "markdown" });
    expect(t.out()).toBe("agent> answer\n");
  });

  it("prompts on a terminal and keeps the prompt below replies", async () => {
    const t = setup({ terminal: true, config: { prompt: "me> " } });
    await t.adapter.start(t.sink);
    await vi.waitFor(() => expect(t.out()).toContain("me> "));
    t.input.write("hi\r");
    await vi.waitFor(() => expect(t.received.map((m) => m.text)).toEqual(["hi"]));
    await t.adapter.send(target, "hello", { format: "markdown" });
    const out = t.out();
    const reply = out.lastIndexOf("agent> hello\n");
    expect(reply).toBeGreaterThan(-1);
    expect(out.slice(reply)).toContain("me> ");
    await t.adapter.stop();
    expect(t.statuses.at(-1)).toBe("stopped");
  });

  it("writes a streamed reply as it comes on one reply line, and brings the prompt back only when it ends", async () => {
    const t = setup({ terminal: true, config: { prompt: "me> " } });
    await t.adapter.start(t.sink);
    await vi.waitFor(() => expect(t.out()).toContain("me> "));
    const appends = t.adapter.appends;
    if (!appends) throw new Error("the terminal appends");
    const before = t.out().length;
    await appends.write(target, "Hello", { end: false });
    await appends.write(target, ", wor", { end: false });
    expect(t.out().slice(before)).not.toContain("me> "); // no prompt in the middle of the reply
    expect(t.out().slice(before)).toContain("agent> Hello, wor");
    await appends.write(target, "ld.", { end: true });
    const after = t.out().slice(before);
    expect(after).toContain("agent> Hello, world.\n");
    expect(after.slice(after.indexOf("world.\n"))).toContain("me> "); // redrawn below it
    await t.adapter.stop();
  });

  it("declares its limits", () => {
    const t = setup();
    expect(t.adapter.platform).toBe("terminal");
    expect(t.adapter.accountId).toBe("terminal");
    expect(t.adapter.limits.maxMessageLength).toBe(100_000);
  });
});

describe("translateMessage (a typed line as the core's message)", () => {
  const config = { id: "term", userId: "me", userName: "Me" };
  it("trims the line and numbers it within the run", () => {
    expect(translateMessage("  hello  ", { config, runId: "r1", seq: 7, sentAt: 42 })).toEqual({
      platform: "terminal",
      accountId: "term",
      chatId: "me",
      chatType: "direct",
      userId: "me",
      userName: "Me",
      messageId: "r1-7",
      text: "hello",
      sentAt: 42,
    });
  });
  it("is nothing for a blank line", () => {
    expect(translateMessage(" \t ", { config, runId: "r1", seq: 1, sentAt: 0 })).toBeUndefined();
  });
});
