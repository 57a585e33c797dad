import { beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { request } from "undici";
import { createManualClock, type Clock, type ManualClock } from "../../shared/clock.js";
import { cryptoRandom, seededRandom, type Random } from "../../shared/random.js";
import { createGateway, headKey, type FakeGateway, type GatewayFault, type GatewayState } from "../../emulator/gateway/index.js";

// ---------- helpers ----------

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function field(value: unknown, ...path: (string | number)[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof key === "number") current = Array.isArray(current) ? current[key] : undefined;
    else current = isRecord(current) ? current[key] : undefined;
  }
  return current;
}

const replyOf = (body: unknown): unknown => field(body, "output", 0, "content", 0, "text");
const tokens = (text: string) => Math.ceil(text.length / 4);

/** A manual clock that also says when someone starts sleeping on it. */
function observedClock(): { clock: Clock; manual: ManualClock; nextSleep: () => Promise<number> } {
  const manual = createManualClock();
  const pending: number[] = [];
  const waiters: ((ms: number) => void)[] = [];
  const clock: Clock = {
    now: () => manual.now(),
    setTimeout: (fn, ms) => manual.setTimeout(fn, ms),
    sleep(ms, signal) {
      const waiter = waiters.shift();
      if (waiter) waiter(ms);
      else pending.push(ms);
      return manual.sleep(ms, signal);
    },
  };
  const nextSleep = () =>
    new Promise<number>((resolve) => {
      const ms = pending.shift();
      if (ms !== undefined) resolve(ms);
      else waiters.push(resolve);
    });
  return { clock, manual, nextSleep };
}

interface Harness {
  gateway: FakeGateway;
  state: GatewayState;
  /** Replaces the state object, as the store does on reset or import. */
  replaceState(next: GatewayState): void;
  changes: () => number;
  faultCalls: string[];
  post(
    instanceId: string,
    body: unknown,
    opts?: { session?: string },
  ): Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    text: string;
    json: unknown;
  }>;
}

type GatewayOptions = { clock?: Clock; random?: Random; faults?: Map<string, GatewayFault> };

/** A gateway for the test that asks for it: closed when that test finishes. */
async function startGateway(opts: GatewayOptions = {}): Promise<Harness> {
  const h = await openGateway(opts);
  onTestFinished(() => h.gateway.close());
  return h;
}

/** A gateway for a whole describe block: its `beforeAll` returns the close. */
async function openGateway(opts: GatewayOptions = {}): Promise<Harness> {
  let state: GatewayState = { responses: {}, heads: {} };
  let changes = 0;
  const faultCalls: string[] = [];
  const faults = opts.faults;
  const gateway = createGateway({
    state: () => state,
    onChange: () => void changes++,
    clock: opts.clock ?? createManualClock(),
    random: opts.random ?? cryptoRandom,
    ...(faults
      ? {
          faultFor: (id: string) => {
            faultCalls.push(id);
            return faults.get(id);
          },
        }
      : {}),
  });
  await gateway.listen(0);
  const harness: Harness = {
    gateway,
    get state() {
      return state;
    },
    replaceState(next) {
      state = next;
    },
    changes: () => changes,
    faultCalls,
    async post(instanceId, body, { session } = {}) {
      const res = await request(`${gateway.urlFor(instanceId)}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(session ? { "x-session-key": session } : {}) },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await res.body.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, headers: res.headers, text, json };
    },
  };
  return harness;
}

/** Sends one turn and returns its reply text (asserting a 200). */
async function say(h: Harness, instanceId: string, input: unknown, session?: string, extra: Record<string, unknown> = {}) {
  const res = await h.post(instanceId, { model: "m1", input, ...extra }, session ? { session } : {});
  expect(res.status, res.text).toBe(200);
  return { reply: replyOf(res.json), id: field(res.json, "id"), body: res.json };
}

interface SseFrame {
  event: string;
  data: Record<string, unknown>;
}

function parseSse(text: string): SseFrame[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "";
      const data: unknown = JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "null");
      if (!isRecord(data)) throw new Error(`frame without JSON object data: ${block}`);
      return { event, data };
    });
}

// ---------- tests ----------

describe("fake gateway: replies and continuity", () => {
  let h: Harness;
  const clock = createManualClock(Date.parse("2026-03-04T05:06:07.890Z"));
  beforeAll(async () => {
    h = await openGateway({ clock });
    return () => h.gateway.close();
  });

  it("answers a plain input in the Responses shape and stores the turn", async () => {
    const before = h.changes();
    const res = await h.post("inst-plain", { model: "claude-x", input: "hello there", instructions: "be brief" });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/application\/json/);
    const body = res.json;
    const id = field(body, "id");
    expect(id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(field(body, "object")).toBe("response");
    expect(field(body, "status")).toBe("completed");
    expect(field(body, "model")).toBe("claude-x");
    expect(field(body, "previous_response_id")).toBeNull();
    expect(field(body, "instructions")).toBe("be brief");
    expect(field(body, "created_at")).toBe(Math.floor(clock.now() / 1000));
    expect(field(body, "output", 0)).toMatchObject({ type: "message", status: "completed", role: "assistant" });
    expect(field(body, "output", 0, "id")).toMatch(/^msg_[0-9a-f]+$/);
    expect(field(body, "output", 0, "content", 0)).toEqual({ type: "output_text", text: "You said: hello there", annotations: [] });

    const stored = h.state.responses[String(id)];
    expect(stored).toEqual({
      id,
      instance_id: "inst-plain",
      session: "main",
      parent_id: null,
      input_text: "hello there",
      output_text: "You said: hello there",
      model: "claude-x",
      created_at: Math.floor(clock.now() / 1000),
    });
    expect(h.state.heads[headKey("inst-plain", "main")]).toBe(id);
    expect(h.changes()).toBeGreaterThan(before);

    const second = await say(h, "inst-plain", "again");
    expect(field(second.body, "previous_response_id")).toBe(id);
    expect(field(second.body, "instructions")).toBeNull();
  });

  it("counts usage as ceil(characters / 4) of input and output", async () => {
    for (const input of ["abcde", "a", "twelve chars", "x".repeat(1001)]) {
      const { body, reply } = await say(h, "inst-usage", input);
      expect(typeof reply).toBe("string");
      const usage = field(body, "usage");
      expect(usage).toEqual({
        input_tokens: tokens(input),
        output_tokens: tokens(String(reply)),
        total_tokens: tokens(input) + tokens(String(reply)),
      });
    }
  });

  it("takes the user text of an item array, newline-joined, ignoring other roles and parts", async () => {
    const { reply } = await say(h, "inst-items", [
      { role: "system", content: "ignored system" },
      { role: "user", content: "one" },
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "two" },
          { type: "input_image", image_url: "https://example.invalid/x.png" },
          { type: "input_text", text: "three" },
        ],
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "ignored reply" }] },
    ]);
    expect(reply).toBe("You said: one\ntwo\nthree");
  });

  it("recalls a session's earlier inputs over three turns, oldest first", async () => {
    expect((await say(h, "inst-recall", "!recall", "s1")).reply).toBe("(nothing yet)");
    await say(h, "inst-recall", "first", "s2");
    await say(h, "inst-recall", "second", "s2");
    await say(h, "inst-recall", "third", "s2");
    expect((await say(h, "inst-recall", "!recall", "s2")).reply).toBe("first\nsecond\nthird");
    // The recall turn itself is part of the conversation now.
    expect((await say(h, "inst-recall", "!recall", "s2")).reply).toBe("first\nsecond\nthird\n!recall");
  });

  it("keeps sessions and instances apart", async () => {
    await say(h, "inst-iso", "a1", "alice");
    await say(h, "inst-iso", "b1", "bob");
    await say(h, "inst-iso", "a2", "alice");
    await say(h, "inst-iso", "m1"); // no header: session main
    await say(h, "inst-iso-2", "other instance", "alice");
    expect((await say(h, "inst-iso", "!recall", "alice")).reply).toBe("a1\na2");
    expect((await say(h, "inst-iso", "!recall", "bob")).reply).toBe("b1");
    expect((await say(h, "inst-iso", "!recall")).reply).toBe("m1");
    expect((await say(h, "inst-iso", "!recall", "main")).reply).toBe("m1\n!recall");
    expect((await say(h, "inst-iso-2", "!recall", "alice")).reply).toBe("other instance");
  });

  it("continues another session's chain with previous_response_id and moves the caller's head", async () => {
    const a1 = await say(h, "inst-prev", "alpha", "x");
    await say(h, "inst-prev", "beta", "x");
    await say(h, "inst-prev", "gamma", "y");
    const branched = await say(h, "inst-prev", "!recall", "y", { previous_response_id: a1.id });
    expect(branched.reply).toBe("alpha");
    expect(field(branched.body, "previous_response_id")).toBe(a1.id);
    // y now continues the branch; x is untouched.
    expect((await say(h, "inst-prev", "!recall", "y")).reply).toBe("alpha\n!recall");
    expect((await say(h, "inst-prev", "!recall", "x")).reply).toBe("alpha\nbeta");
  });

  it("answers 400 previous_response_not_found for an unknown id or another instance's id, storing nothing", async () => {
    const foreign = await say(h, "inst-other", "mine");
    for (const id of ["resp_00000000000000000000000000000000", "constructor", String(foreign.id)]) {
      const count = Object.keys(h.state.responses).length;
      const res = await h.post("inst-unknown", { model: "m", input: "hi", previous_response_id: id });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({
        error: {
          type: "invalid_request_error",
          code: "previous_response_not_found",
          param: "previous_response_id",
          message: `Previous response with id '${id}' not found.`,
        },
      });
      expect(Object.keys(h.state.responses).length).toBe(count);
    }
  });

  it("!count gives the number of earlier user turns", async () => {
    expect((await say(h, "inst-count", "!count", "c")).reply).toBe("0");
    await say(h, "inst-count", "one", "c");
    await say(h, "inst-count", "two", "c");
    expect((await say(h, "inst-count", "!count", "c")).reply).toBe("3");
    expect((await say(h, "inst-count", "!count", "fresh")).reply).toBe("0");
  });

  it("!long N gives exactly N characters, paragraphs and one fenced block, deterministically", async () => {
    for (const n of [0, 1, 7, 150, 1000, 250_000]) {
      const { reply } = await say(h, "inst-long", `!long ${n}`);
      expect(typeof reply).toBe("string");
      const text = String(reply);
      expect(text.length).toBe(n);
      const fences = text.split("```").length - 1;
      if (n >= 1000) {
        expect(fences).toBe(2);
        const paragraphs = text.split(/\n\n/).filter((p) => p.trim() !== "" && !p.includes("```"));
        expect(paragraphs.length).toBeGreaterThanOrEqual(2);
      }
      if (n <= 7) expect(fences).toBe(0);
      const again = await say(h, "inst-long-2", `!long ${n}`);
      expect(again.reply).toBe(text);
    }
  });

  it("rejects directive arguments out of range with 400 invalid_value", async () => {
    for (const input of ["!long 1000001", "!long abc", "!long", "!sleep 600001", "!fail 200", "!fail"]) {
      const res = await h.post("inst-bad-directive", { model: "m", input });
      expect(res.status, input).toBe(400);
      expect(field(res.json, "error", "code")).toBe("invalid_value");
      expect(field(res.json, "error", "param")).toBe("input");
    }
    expect(h.state.heads[headKey("inst-bad-directive", "main")]).toBeUndefined();
  });

  it("!fail STATUS answers that status with an error body and stores nothing", async () => {
    await say(h, "inst-fail", "kept");
    const head = h.state.heads[headKey("inst-fail", "main")];
    for (const [status, type] of [
      [503, "server_error"],
      [429, "invalid_request_error"],
    ] as const) {
      const res = await h.post("inst-fail", { model: "m", input: `!fail ${status}` });
      expect(res.status).toBe(status);
      expect(field(res.json, "error", "type")).toBe(type);
      expect(typeof field(res.json, "error", "message")).toBe("string");
    }
    expect(h.state.heads[headKey("inst-fail", "main")]).toBe(head);
    expect((await say(h, "inst-fail", "!recall")).reply).toBe("kept");
  });

  it("streams Responses events in order, whose deltas add up to the final text", async () => {
    const res = await h.post("inst-stream", { model: "m-stream", input: "!long 1000", stream: true }, { session: "st" });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
    const frames = parseSse(res.text);
    const types = frames.map((f) => f.event);
    const deltas = frames.filter((f) => f.event === "response.output_text.delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...deltas.map(() => "response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    frames.forEach((f, i) => {
      expect(f.data.type).toBe(f.event);
      expect(f.data.sequence_number).toBe(i);
    });
    const created = frames[0]!.data;
    expect(field(created, "response", "status")).toBe("in_progress");
    const completed = frames.at(-1)!.data.response;
    const finalText = replyOf(completed);
    expect(typeof finalText).toBe("string");
    expect(String(finalText).length).toBe(1000);
    expect(deltas.map((f) => f.data.delta).join("")).toBe(finalText);
    expect(frames.find((f) => f.event === "response.output_text.done")?.data.text).toBe(finalText);
    const itemId = field(completed, "output", 0, "id");
    for (const f of deltas) expect(f.data.item_id).toBe(itemId);
    expect(field(completed, "status")).toBe("completed");
    expect(field(completed, "model")).toBe("m-stream");
    expect(field(completed, "id")).toBe(field(created, "response", "id"));
    // A streamed turn is part of the conversation like any other.
    expect(h.state.heads[headKey("inst-stream", "st")]).toBe(field(completed, "id"));
    expect((await say(h, "inst-stream", "!recall", "st")).reply).toBe("!long 1000");
  });

  it("answers 400 in the OpenAI error shape for bad bodies", async () => {
    const cases: [string, string | null, string][] = [
      ["{not json", null, "invalid_json"],
      [JSON.stringify([1, 2]), null, "invalid_json"],
      [JSON.stringify({ input: "x" }), "model", "missing_required_parameter"],
      [JSON.stringify({ model: "m" }), "input", "missing_required_parameter"],
      [JSON.stringify({ model: "m", input: 42 }), "input", "invalid_type"],
      [JSON.stringify({ model: "m", input: [{ role: "user", content: 5 }] }), "input[0].content", "invalid_type"],
      [JSON.stringify({ model: "m", input: "x", stream: "yes" }), "stream", "invalid_type"],
    ];
    for (const [body, param, code] of cases) {
      const res = await h.post("inst-bad", body);
      expect(res.status, body).toBe(400);
      expect(res.json, body).toMatchObject({ error: { type: "invalid_request_error", code, param } });
      expect(typeof field(res.json, "error", "message")).toBe("string");
    }
    expect(h.state.heads[headKey("inst-bad", "main")]).toBeUndefined();
  });

  it("answers 404 JSON for any other route or method", async () => {
    for (const [method, path] of [
      ["GET", "/instances/i/v1/responses"],
      ["POST", "/v1/responses"],
      ["POST", "/instances/i/v1/chat"],
    ] as const) {
      const res = await request(`${h.gateway.url}${path}`, { method, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(res.statusCode).toBe(404);
      const body: unknown = await res.body.json();
      expect(field(body, "error", "type")).toBe("invalid_request_error");
    }
  });

  it("reads the state through the getter, so a replaced state starts afresh", async () => {
    await say(h, "inst-replace", "before");
    const old = h.state;
    h.replaceState({ responses: {}, heads: {} });
    try {
      expect((await say(h, "inst-replace", "!recall")).reply).toBe("(nothing yet)");
      expect(Object.keys(h.state.responses)).toHaveLength(1);
    } finally {
      h.replaceState(old);
    }
  });

  it("forgetInstance drops the instance's responses and heads only", async () => {
    const a = await say(h, "inst-forget", "secret", "s");
    await say(h, "inst-forget", "more", "t");
    await say(h, "inst-keep", "keep me", "s");
    const changes = h.changes();
    h.gateway.forgetInstance("inst-forget");
    expect(h.changes()).toBeGreaterThan(changes);
    expect(Object.values(h.state.responses).some((r) => r.instance_id === "inst-forget")).toBe(false);
    expect(Object.keys(h.state.heads).some((k) => k.startsWith("inst-forget\u0000"))).toBe(false);
    expect((await say(h, "inst-keep", "!recall", "s")).reply).toBe("keep me");
    const res = await h.post("inst-forget", { model: "m", input: "hi", previous_response_id: a.id });
    expect(field(res.json, "error", "code")).toBe("previous_response_not_found");
    expect((await say(h, "inst-forget", "!recall", "s")).reply).toBe("(nothing yet)");
  });
});

describe("fake gateway: time, faults and determinism", () => {
  it("!sleep MS waits on the clock before answering and storing", async () => {
    const { clock, manual, nextSleep } = observedClock();
    const h = await startGateway({ clock });
    const pending = h.post("inst-sleep", { model: "m", input: "!sleep 1234" });
    expect(await nextSleep()).toBe(1234);
    expect(Object.keys(h.state.responses)).toHaveLength(0);
    manual.advance(1234);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(replyOf(res.json)).toBe("slept 1234");
    expect(Object.keys(h.state.responses)).toHaveLength(1);
  });

  it("a turn that completes after its instance was forgotten stores nothing", async () => {
    const { clock, manual, nextSleep } = observedClock();
    const h = await startGateway({ clock });
    const pending = h.post("inst-gone", { model: "m", input: "!sleep 10" });
    await nextSleep();
    h.gateway.forgetInstance("inst-gone");
    manual.advance(10);
    expect((await pending).status).toBe(200);
    expect(Object.keys(h.state.responses)).toHaveLength(0);
    expect(h.state.heads).toEqual({});
  });

  it("fault status answers that status with an error body, once per request, storing nothing", async () => {
    const faults = new Map<string, GatewayFault>([["bad", { status: 502 }]]);
    const h = await startGateway({ faults });
    const res = await h.post("bad", { model: "m", input: "hi" });
    expect(res.status).toBe(502);
    expect(field(res.json, "error", "type")).toBe("server_error");
    expect(h.faultCalls).toEqual(["bad"]);
    expect((await say(h, "good", "hi")).reply).toBe("You said: hi");
    expect(h.faultCalls).toEqual(["bad", "good"]);
    expect(Object.values(h.state.responses).map((r) => r.instance_id)).toEqual(["good"]);
  });

  it("fault reset destroys the connection without an answer", async () => {
    const h = await startGateway({ faults: new Map([["r", { error: "reset" }]]) });
    const error: unknown = await h.post("r", { model: "m", input: "hi" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(field(error, "code")).toMatch(/^(UND_ERR_SOCKET|ECONNRESET)$/);
    expect(Object.keys(h.state.responses)).toHaveLength(0);
  });

  it("fault timeout never answers, and close() ends the hanging socket", async () => {
    const h = await startGateway({ faults: new Map([["t", { error: "timeout" }]]) });
    let settled = false;
    const hanging = h.post("t", { model: "m", input: "hi" }).then(
      (res) => {
        settled = true;
        return res;
      },
      (e: unknown) => {
        settled = true;
        return e;
      },
    );
    await vi.waitFor(() => expect(h.faultCalls).toContain("t"), { timeout: 10_000, interval: 5 });
    // The server has decided on the hanging request; a full exchange after it proves it stays unanswered.
    expect((await say(h, "ok", "ping")).reply).toBe("You said: ping");
    expect(settled).toBe(false);
    await h.gateway.close();
    expect(await hanging).toBeInstanceOf(Error);
    expect(() => h.gateway.url).toThrow();
    expect(h.state.heads[headKey("t", "main")]).toBeUndefined();
  });

  it("fault latency delays the request on the clock, then it is served", async () => {
    const { clock, manual, nextSleep } = observedClock();
    const h = await startGateway({ clock, faults: new Map([["slow", { latencyMs: 700 }]]) });
    const pending = h.post("slow", { model: "m", input: "late" });
    expect(await nextSleep()).toBe(700);
    expect(Object.keys(h.state.responses)).toHaveLength(0);
    manual.advance(700);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(replyOf(res.json)).toBe("You said: late");
  });

  it("ids repeat with the same seed and differ with another", async () => {
    const run = async (seed: string) => {
      const h = await startGateway({ random: seededRandom(seed) });
      const ids: unknown[] = [];
      for (const input of ["one", "two", "!recall"]) {
        const { body } = await say(h, "inst-seed", input);
        ids.push(field(body, "id"), field(body, "output", 0, "id"));
      }
      return ids;
    };
    const first = await run("seed-a");
    const second = await run("seed-a");
    const other = await run("seed-b");
    expect(new Set(first).size).toBe(first.length);
    for (const id of first) expect(id).toMatch(/^(resp|msg)_[0-9a-f]+$/);
    expect(second).toEqual(first);
    expect(other).not.toEqual(first);
  });

  it("urlFor names the instance under the listening base URL", async () => {
    const h = await startGateway();
    expect(h.gateway.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(h.gateway.urlFor("abc-123")).toBe(`${h.gateway.url}/instances/abc-123`);
  });
});
