import { describe, expect, it, vi } from "vitest";
import { rawLength, SendError, type ChatAdapter, type ChatTarget, type EditCapability } from "../../../daemon/vocabulary/adapter.js";
import { createPreviewDriver } from "../../../daemon/core/stream-delivery.js";
import { chunksFor } from "../../../daemon/core/delivery.js";
import { StoppingError } from "../../../daemon/core/relay-types.js";
import { telegramMarkdownToHtml, telegramVisibleLength } from "../../../daemon/adapters/telegram/index.js";
import type { StoredPreview } from "../../../daemon/vocabulary/records.js";
import { createManualClock } from "../../../shared/clock.js";

const target: ChatTarget = { platform: "p", accountId: "a", chatId: "c", chatType: "direct" };

/** A platform with editable messages; `editFailures` makes the next edits throw. */
function platform(limits: { maxMessageLength: number; measure?: (text: string) => number } = { maxMessageLength: 100 }) {
  const messages = new Map<string, string>();
  const ops: string[] = [];
  let next = 1;
  const state = { editFailures: 0, failure: new Error("edit failed") as Error };
  const adapter: ChatAdapter = {
    platform: "p",
    accountId: "a",
    limits: { maxMessageLength: limits.maxMessageLength, typingRefreshMs: 0, minEditIntervalMs: 1000 },
    redelivers: false,
    measure: limits.measure ?? rawLength,
    async start() {},
    async stop() {},
    async send(_t, text) {
      const id = String(next++);
      messages.set(id, text);
      ops.push(`send ${id}`);
      return { messageId: id };
    },
    edits: {
      async edit(_t, id, text) {
        if (state.editFailures > 0) {
          state.editFailures--;
          ops.push(`edit ${id} failed`);
          throw state.failure;
        }
        messages.set(id, text);
        ops.push(`edit ${id}`);
      },
    },
    async sendTyping() {},
  };
  return { adapter, messages, ops, state };
}

function drive(p: ReturnType<typeof platform>, records: StoredPreview[] = []) {
  const clock = createManualClock();
  const driver = createPreviewDriver({
    adapter: p.adapter,
    target,
    clock,
    gate: new Map(),
    maxAttempts: 3,
    record: async (r) => void records.push(r),
    signal: new AbortController().signal,
  });
  return { driver, clock, records };
}

/** Advances the manual clock until `promise` settles. */
async function settle<T>(clock: ReturnType<typeof createManualClock>, promise: Promise<T>): Promise<T> {
  let done = false;
  void promise.finally(() => (done = true));
  await vi.waitFor(
    () => {
      clock.advance(500);
      expect(done).toBe(true);
    },
    { interval: 5 }, // each look lets the driver's awaited I/O (all in memory here) run
  );
  return promise;
}

describe("preview driver", () => {
  it("paces two topics of one chat together (the platform's flood limit counts per chat), and two chats apart", async () => {
    const p = platform();
    const clock = createManualClock();
    const gate = new Map();
    const start = (over: Partial<ChatTarget>) =>
      createPreviewDriver({
        adapter: p.adapter,
        target: { ...target, chatType: "group", ...over },
        clock,
        gate,
        maxAttempts: 3,
        record: async () => {},
        signal: new AbortController().signal,
      });
    start({ threadId: "7" }).update("in topic 7");
    await vi.waitFor(() => expect(p.ops).toEqual(["send 1"]));
    start({ threadId: "8" }).update("in topic 8");
    start({ chatId: "other" }).update("another chat");
    await vi.waitFor(() => expect(p.ops).toEqual(["send 1", "send 2"]));
    expect(p.messages.get("2")).toBe("another chat");
    clock.advance(999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(p.ops).toHaveLength(2);
    clock.advance(1);
    await vi.waitFor(() => expect(p.ops).toEqual(["send 1", "send 2", "send 3"]));
    expect(p.messages.get("3")).toBe("in topic 8");
  });

  it("tells each message's last operation it is final, and (edits.end) tells a message once more when its text was complete before the reply was", async () => {
    const finals: string[] = [];
    const streaming = (endsStreams: boolean) => {
      const p = platform();
      const { send, edits } = p.adapter;
      const edit: EditCapability["edit"] = async (t, id, text, options) => {
        finals.push(`edit ${String(options.final)}`);
        await edits?.edit(t, id, text, options);
      };
      p.adapter = {
        ...p.adapter,
        send: (t, text, options) => {
          finals.push(`send ${String(options.final)}`);
          return send(t, text, options);
        },
        // A native stream is ended by one more edit marked final.
        edits: endsStreams ? { edit, end: (t, id, text) => edit(t, id, text, { format: "markdown", final: true }) } : { edit },
      };
      return p;
    };
    // The text is all there before the reply completes: with endsStreams, one more edit says it is final.
    const ends = streaming(true);
    const a = drive(ends);
    a.driver.update("Done.");
    await vi.waitFor(() => expect(ends.ops).toEqual(["send 1"]));
    expect(await settle(a.clock, a.driver.finish("Done."))).toBe("done");
    expect(finals.splice(0)).toEqual(["send false", "edit true"]);
    expect(ends.messages.get("1")).toBe("Done.");
    // Without it, nothing more is sent.
    const plain = streaming(false);
    const b = drive(plain);
    b.driver.update("Done.");
    await vi.waitFor(() => expect(plain.ops).toEqual(["send 1"]));
    expect(await settle(b.clock, b.driver.finish("Done."))).toBe("done");
    expect(finals.splice(0)).toEqual(["send false"]);
    // A last edit that brings the final text says so itself: no extra one.
    const more = streaming(true);
    const c = drive(more);
    c.driver.update("Do");
    await vi.waitFor(() => expect(more.ops).toEqual(["send 1"]));
    expect(await settle(c.clock, c.driver.finish("Done."))).toBe("done");
    expect(finals.splice(0)).toEqual(["send false", "edit true"]);
  });

  it("paces a stream's end like any edit (minEditIntervalMs after the chat's last write), and ends only what may be open", async () => {
    const run = async (mayBeOpen: boolean) => {
      const p = platform();
      const clock = createManualClock(0);
      const at: string[] = [];
      const { send } = p.adapter;
      p.adapter = {
        ...p.adapter,
        send: (t, text, options) => {
          at.push(`send at ${clock.now()}`);
          return send(t, text, options);
        },
        edits: {
          edit: async () => {},
          end: async () => void at.push(`end at ${clock.now()}`),
          mayBeOpen: () => mayBeOpen,
        },
      };
      const driver = createPreviewDriver({
        adapter: p.adapter,
        target,
        clock,
        gate: new Map(),
        maxAttempts: 3,
        record: async () => {},
        signal: new AbortController().signal,
      });
      driver.update("Done.");
      await vi.waitFor(() => expect(at).toHaveLength(1));
      expect(await settle(clock, driver.finish("Done."))).toBe("done");
      return at;
    };
    const [sent, ended] = await run(true);
    expect(sent).toBe("send at 0");
    // At 1000 or later (the manual clock moves 500 at a time while the driver waits): never sooner.
    expect(Number(ended?.replace("end at ", ""))).toBeGreaterThanOrEqual(1000);
    // An ordinary message (the adapter says no stream can be open): no end, no wait.
    expect(await run(false)).toEqual(["send at 0"]);
  });

  it("sends the first text at once, edits in place, and journals the message id when it is created", async () => {
    const p = platform();
    const { driver, clock, records } = drive(p);
    driver.update("Hello");
    await vi.waitFor(() => expect(p.ops).toEqual(["send 1"]));
    expect(records.at(-1)?.ids).toEqual(["1"]);
    driver.update("Hello, world");
    expect(await settle(clock, driver.finish("Hello, world."))).toBe("done");
    expect([...p.messages.values()]).toEqual(["Hello, world."]);
    expect(p.ops.filter((o) => o.startsWith("send"))).toHaveLength(1);
  });

  it("transient edit failures are tried again; after maxAttempts in a row the final text is sent once as a new message", async () => {
    const p = platform();
    const { driver, clock } = drive(p);
    driver.update("Hello");
    await vi.waitFor(() => expect(p.ops).toEqual(["send 1"]));
    p.state.editFailures = 3;
    driver.update("Hello, world");
    expect(await settle(clock, driver.finish("Hello, world, and more."))).toBe("done");
    expect(p.ops.filter((o) => o.endsWith("failed"))).toHaveLength(3);
    expect(p.messages.get("2")).toBe("Hello, world, and more."); // the final text, once
    expect(p.messages.size).toBe(2);
  });

  it("ignores text that does not extend what it was given (a retried attempt starting over) until it does", async () => {
    const p = platform();
    const { driver, clock } = drive(p);
    driver.update("Once upon a time");
    await vi.waitFor(() => expect(p.ops).toEqual(["send 1"]));
    driver.update("Once"); // the retried attempt begins again
    expect(driver.text).toBe("Once upon a time");
    driver.update("Once upon a time there was");
    expect(driver.text).toBe("Once upon a time there was");
    expect(await settle(clock, driver.finish("Once upon a time there was a bridge."))).toBe("done");
    expect([...p.messages.values()]).toEqual(["Once upon a time there was a bridge."]);
  });

  it("a long formatted reply streamed in small pieces ends as exactly the chunks the non-streamed path sends", async () => {
    const measure = (text: string) => telegramVisibleLength(telegramMarkdownToHtml(text));
    const p = platform({ maxMessageLength: 4096, measure });
    const { driver, clock } = drive(p);
    const paragraphs: string[] = [];
    for (let i = 0; paragraphs.join("\n\n").length < 9000; i++) {
      paragraphs.push(
        `Step ${i}: use **bold ${i}** and \`code_${i} && x < y\` with [the docs ${i}](https://example.com/docs?a=${i}&b=2) for R&D & more, then *stress* it.`,
      );
      if (i % 7 === 3) paragraphs.push("```ts\nconst x = 1 < 2 && 3 > 2;\nconsole.log(x);\n```");
    }
    const text = paragraphs.join("\n\n");
    for (let at = 16; at < text.length; at += 16) {
      driver.update(text.slice(0, at));
      if (at % 1600 === 0) clock.advance(1000);
      await Promise.resolve();
    }
    expect(await settle(clock, driver.finish(text))).toBe("done");
    expect(p.messages.size).toBeGreaterThanOrEqual(3);
    expect([...p.messages.values()]).toEqual(chunksFor(p.adapter, text, "markdown"));
  });

  it("a permanent refusal of the first send gives up (the caller tells the person)", async () => {
    const p = platform();
    p.adapter.send = async () => {
      throw new SendError("blocked", { permanent: true, status: 403 });
    };
    const { driver, clock } = drive(p);
    driver.update("Hello");
    expect(await settle(clock, driver.finish("Hello."))).toBe("gave_up");
  });

  it("stops before the next send or edit once the account's lease may no longer reach the platform (its deadline passed), keeping the preview", async () => {
    const p = platform();
    const clock = createManualClock();
    const records: StoredPreview[] = [];
    let reachable = true;
    const driver = createPreviewDriver({
      adapter: p.adapter,
      target,
      clock,
      gate: new Map(),
      maxAttempts: 3,
      record: async (r) => void records.push(r),
      signal: new AbortController().signal,
      mayReach: () => reachable,
    });
    driver.update("Hello");
    await vi.waitFor(() => expect(records).toHaveLength(1));
    reachable = false;
    driver.update("Hello, world");
    const ended = driver.finish("Hello, world.").then(
      () => "finished",
      (error: unknown) => error,
    );
    expect(await settle(clock, ended)).toBeInstanceOf(StoppingError);
    expect(p.ops).toEqual(["send 1"]);
    expect(records.at(-1)?.ids).toEqual(["1"]);
  });
});
