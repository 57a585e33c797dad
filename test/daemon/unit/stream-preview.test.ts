/**
 * The stream-preview planner, driven as the relay will drive it, against an
 * in-memory chat, on a manual clock: what the person sees, when, and how it ends.
 */
import { describe, expect, it } from "vitest";
import { createManualClock, type ManualClock } from "../../../shared/clock.js";
import { placeChunks, splitReply } from "../../../daemon/core/chunking.js";
import {
  createStreamPreview,
  type PreviewAction,
  type PreviewFailure,
  type StreamPreview,
  type StreamPreviewOptions,
} from "../../../daemon/core/stream-preview.js";
import { streamText } from "../../../emulator/gateway/model.js";

type Performed = Extract<PreviewAction, { kind: "send" | "edit" | "delete" }>;
interface Op {
  at: number;
  action: Performed;
}

/** A chat that performs what the planner asks; `fail` may refuse an action. */
function chat(clock: ManualClock, fail?: (action: PreviewAction) => PreviewFailure | undefined) {
  const shown: (string | null)[] = [];
  const ops: Op[] = [];
  return {
    shown,
    ops,
    /** Pumps the plan until it has to wait; returns the last answer (wait/idle/done). */
    pump(plan: StreamPreview): PreviewAction {
      for (;;) {
        const action = plan.next();
        if (action.kind !== "send" && action.kind !== "edit" && action.kind !== "delete") return action;
        ops.push({ at: clock.now(), action });
        const failure = fail?.(action);
        if (failure) {
          plan.failed(action, failure);
          continue;
        }
        if (action.kind === "delete") shown[action.message] = null;
        else shown[action.message] = action.text;
        plan.sent(action);
      }
    },
  };
}

const base = (clock: ManualClock, extra: Partial<StreamPreviewOptions> = {}): StreamPreviewOptions => ({
  measure: (t) => t.length,
  limit: 4096,
  clock,
  minEditIntervalMs: 1000,
  ...extra,
});

/** Streams `text` in `size`-character deltas, `gap` ms apart, pumping after each; then finishes and drains. */
function stream(plan: StreamPreview, c: ReturnType<typeof chat>, clock: ManualClock, text: string, size: number, gap: number) {
  for (let end = size; ; end += size) {
    plan.update(text.slice(0, Math.min(end, text.length)));
    c.pump(plan);
    if (end >= text.length) break;
    clock.advance(gap);
  }
  plan.finish(text);
  for (let guard = 0; guard < 10_000; guard++) {
    const last = c.pump(plan);
    if (last.kind === "done") return;
    if (last.kind !== "wait") throw new Error(`stuck: ${last.kind}`);
    clock.set(last.until);
  }
  throw new Error("never done");
}

const sends = (ops: Op[]) => ops.filter((o) => o.action.kind === "send");
const edits = (ops: Op[]) => ops.filter((o) => o.action.kind === "edit");

describe("stream preview planner", () => {
  it("sends the first text at once, then edits the same message at most once per interval, with the latest text", () => {
    const clock = createManualClock();
    const t0 = clock.now();
    const plan = createStreamPreview(base(clock));
    const c = chat(clock);
    plan.update("Hel");
    expect(c.pump(plan)).toEqual({ kind: "idle" });
    expect(c.ops).toEqual([{ at: t0, action: { kind: "send", message: 0, text: "Hel" } }]);
    plan.update("Hello");
    expect(c.pump(plan)).toEqual({ kind: "wait", until: t0 + 1000 });
    clock.advance(400);
    plan.update("Hello, wor");
    expect(c.pump(plan)).toEqual({ kind: "wait", until: t0 + 1000 });
    clock.advance(600);
    expect(c.pump(plan)).toEqual({ kind: "idle" });
    expect(c.ops.at(-1)).toEqual({ at: t0 + 1000, action: { kind: "edit", message: 0, text: "Hello, wor" } });
    plan.update("Hello, world");
    plan.finish("Hello, world");
    expect(c.pump(plan)).toEqual({ kind: "wait", until: t0 + 2000 });
    clock.advance(1000);
    expect(c.pump(plan)).toEqual({ kind: "done" });
    expect(c.shown).toEqual(["Hello, world"]);
    expect(c.ops.map((o) => o.at - t0)).toEqual([0, 1000, 2000]);
  });

  it("a streamed !stream reply: one message, edited in place, throttled, ending with exactly the final text", () => {
    const clock = createManualClock();
    const plan = createStreamPreview(base(clock));
    const c = chat(clock);
    const text = streamText(600);
    stream(plan, c, clock, text, 16, 150);
    expect(sends(c.ops)).toHaveLength(1);
    expect(edits(c.ops).length).toBeGreaterThan(3);
    expect(c.shown).toEqual([text]);
    const times = c.ops.map((o) => o.at);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
    // The code block is closed in every preview, even while it is being written.
    for (const o of c.ops) if (o.action.kind !== "delete") expect(o.action.text.split("```").length % 2).toBe(1);
  });

  it("honours retryAfterMs: the next operation waits that long, the same edit is retried with the newest text", () => {
    const clock = createManualClock();
    const t0 = clock.now();
    let refuse = true;
    const c = chat(clock, (a) => {
      if (a.kind !== "edit" || !refuse) return undefined;
      refuse = false;
      return { retryAfterMs: 5000 };
    });
    const plan = createStreamPreview(base(clock));
    plan.update("one");
    c.pump(plan);
    clock.advance(1000);
    plan.update("one two");
    expect(c.pump(plan)).toEqual({ kind: "wait", until: t0 + 6000 });
    plan.update("one two three");
    clock.set(t0 + 6000);
    c.pump(plan);
    expect(c.ops.map((o) => [o.at - t0, o.action.kind, "text" in o.action ? o.action.text : ""])).toEqual([
      [0, "send", "one"],
      [1000, "edit", "one two"],
      [6000, "edit", "one two three"],
    ]);
  });

  it("a text that outgrows a message finishes it at a clean boundary and continues in a new one; 9,000 characters end split correctly", () => {
    const clock = createManualClock();
    const limit = 2000;
    const plan = createStreamPreview(base(clock, { limit }));
    const c = chat(clock);
    const text = streamText(9000);
    stream(plan, c, clock, text, 16, 30);
    const final = c.shown.filter((s): s is string => s !== null);
    expect(final).toEqual(splitReply(text, limit));
    expect(final.length).toBeGreaterThanOrEqual(5);
    for (const m of final) expect(m.length).toBeLessThanOrEqual(limit);
    // Exactly one message per chunk, each finished (final edit) before the next was sent.
    expect(sends(c.ops)).toHaveLength(final.length);
    c.ops.forEach((o, i) => {
      if (o.action.kind !== "send" || o.action.message === 0) return;
      const before = c.ops
        .slice(0, i)
        .filter((p) => p.action.kind !== "delete" && p.action.message === o.action.message - 1)
        .at(-1)!;
      expect(before.action).toMatchObject({ text: final[o.action.message - 1] });
    });
    for (let i = 1; i < c.ops.length; i++) expect(c.ops[i]!.at - c.ops[i - 1]!.at).toBeGreaterThanOrEqual(1000);
  });

  it("splits inside a code block with the fence closed and reopened, and by the platform's measure", () => {
    const clock = createManualClock();
    const code = `\`\`\`py\n${Array.from({ length: 40 }, (_, i) => `print(${i})`).join("\n")}\n\`\`\``;
    const text = `Intro.\n\n${code}\n\nDone.`;
    // A platform that counts every character twice: chunks must fit that count.
    const plan = createStreamPreview(base(clock, { limit: 200, measure: (t) => 2 * t.length }));
    const c = chat(clock);
    stream(plan, c, clock, text, 7, 100);
    const final = c.shown.filter((s): s is string => s !== null);
    expect(final.length).toBeGreaterThan(3);
    for (const m of final) {
      expect(2 * m.length).toBeLessThanOrEqual(200);
      expect(m.split("```").length % 2).toBe(1);
    }
    expect(final[1]).toMatch(/^```py\n/);
    expect(
      final
        .join("\n")
        .replace(/```(py)?\n?/g, "")
        .replace(/\s+/g, ""),
    ).toBe(text.replace(/```(py)?\n?/g, "").replace(/\s+/g, ""));
  });

  it("one action at a time: a preview edit in flight when the stream ends cannot overwrite the final text", () => {
    const clock = createManualClock();
    const plan = createStreamPreview(base(clock));
    plan.update("draft");
    const send = plan.next();
    expect(send).toMatchObject({ kind: "send", text: "draft" });
    plan.update("draft and more");
    plan.finish("draft and more, final.");
    expect(plan.next()).toEqual({ kind: "busy" });
    plan.sent(send);
    clock.advance(1000);
    const edit = plan.next();
    expect(edit).toEqual({ kind: "edit", message: 0, text: "draft and more, final." });
    expect(plan.next()).toEqual({ kind: "busy" });
    plan.sent(edit);
    expect(plan.next()).toEqual({ kind: "done" });
  });

  it("a preview edit that fails for good stops previews; the end sends the final text once and deletes the broken preview", () => {
    const clock = createManualClock();
    const c = chat(clock, (a) => (a.kind === "edit" && a.message === 0 ? { permanent: true } : undefined));
    const plan = createStreamPreview(base(clock));
    plan.update("first words");
    c.pump(plan);
    clock.advance(1000);
    plan.update("first words and then");
    c.pump(plan);
    clock.advance(5000);
    plan.update("first words and then some more");
    expect(c.pump(plan)).toEqual({ kind: "idle" }); // no more previews
    plan.finish("first words and then some more.");
    clock.advance(5000);
    expect(c.pump(plan)).toMatchObject({ kind: "wait" });
    clock.advance(1000);
    expect(c.pump(plan)).toEqual({ kind: "done" });
    expect(c.ops.map((o) => o.action.kind)).toEqual(["send", "edit", "send", "delete"]);
    expect(c.shown).toEqual([null, "first words and then some more."]);
  });

  it("a send that fails for good gives up", () => {
    const clock = createManualClock();
    const c = chat(clock, () => ({ permanent: true }));
    const plan = createStreamPreview(base(clock));
    plan.update("hi");
    expect(c.pump(plan)).toEqual({ kind: "done" });
    expect(plan.gaveUp).toBe(true);
  });

  it("resumes from its journaled state after a restart: the same messages are finished, none sent anew", () => {
    const clock = createManualClock();
    const limit = 300;
    const text = streamText(1000);
    const first = createStreamPreview(base(clock, { limit }));
    const c = chat(clock);
    first.update(text.slice(0, 450));
    for (let i = 0; i < 5; i++) {
      c.pump(first);
      clock.advance(1000);
    }
    const journaled = JSON.parse(JSON.stringify(first.state())) as ReturnType<StreamPreview["state"]>;
    const before = c.shown.length;
    expect(before).toBeGreaterThanOrEqual(2);
    // Restart: the answer is known in full.
    const again = createStreamPreview(base(clock, { limit, resume: journaled }));
    again.finish(text);
    for (let guard = 0; guard < 100; guard++) {
      const last = c.pump(again);
      if (last.kind === "done") break;
      if (last.kind === "wait") clock.set(last.until);
    }
    const final = c.shown.filter((s): s is string => s !== null);
    expect(final.join("").replace(/\s+/g, "")).toBe(
      placeChunks(text, limit)
        .map((p) => p.text)
        .join("")
        .replace(/\s+/g, ""),
    );
    // The messages shown before the restart were edited, not sent again.
    const sentAgain = c.ops.slice(before).filter((o) => o.action.kind === "send" && o.action.message < before);
    expect(sentAgain).toEqual([]);
    for (const m of final) expect(m.length).toBeLessThanOrEqual(limit);
  });

  it("a final text that is not the streamed one is laid out again over the same messages", () => {
    const clock = createManualClock();
    const plan = createStreamPreview(base(clock, { limit: 40 }));
    const c = chat(clock);
    stream(plan, c, clock, "", 1, 1); // nothing: no message at all
    expect(c.ops).toEqual([]);
    const p2 = createStreamPreview(base(clock, { limit: 40 }));
    const c2 = chat(clock);
    p2.update("alpha beta gamma delta epsilon zeta eta theta iota kappa");
    c2.pump(p2);
    p2.finish("short answer");
    for (let guard = 0; guard < 100; guard++) {
      const last = c2.pump(p2);
      if (last.kind === "done") break;
      if (last.kind === "wait") clock.set(last.until);
    }
    expect(c2.shown.filter((s) => s !== null)).toEqual(["short answer"]);
  });
});

describe("placeChunks and closeOpenFence (chunking helpers the planner uses)", () => {
  it("each chunk's start and prefix continue the text: re-splitting from there gives the same rest", async () => {
    const { closeOpenFence } = await import("../../../daemon/core/chunking.js");
    const text = `Intro line.\n\n${`\`\`\`ts\n${Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join("\n")}\n\`\`\``}\n\n${streamText(700)}`;
    for (const limit of [120, 300, 1000]) {
      const placed = placeChunks(text, limit);
      expect(placed.map((p) => p.text)).toEqual(splitReply(text, limit));
      placed.forEach((p, i) => {
        const rest = placeChunks(p.prefix + text.slice(p.start), limit).map((q) => q.text);
        expect(rest).toEqual(placed.slice(i).map((q) => q.text));
      });
      expect(placed.some((p) => p.prefix === "```ts\n")).toBe(limit < 500);
    }
    expect(closeOpenFence("a\n\n```ts\nlet x = 1;\n")).toBe("a\n\n```ts\nlet x = 1;\n```");
    expect(closeOpenFence("a\n\n```ts\nlet x = 1;\n```")).toBe("a\n\n```ts\nlet x = 1;\n```");
    expect(closeOpenFence("no fence")).toBe("no fence");
  });
});
