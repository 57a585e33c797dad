/**
 * The typed client's streaming, against the emulator on a real loopback port
 * (its proxy, then the fake gateway). The emulator runs on a manual clock, so
 * `!stream S` only moves when the test moves time: "the first delta comes
 * before the answer completes" is shown by events, never by sleeping.
 */
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServiceClient, ServiceError, type ResponseStreamEvent, type ServiceClient } from "../../shared/client/index.js";
import { streamText } from "../../emulator/gateway/model.js";
import { outputTextOf } from "../../shared/schemas/responses.js";
import { createCountedClock } from "../helpers/counted-clock.js";
import { deadPort, listenOn, runningInstance, signupOrg, startEmulator, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator;
const clock = createCountedClock();
let api: ServiceClient;
let instanceId: string;

beforeAll(async () => {
  t = await startEmulator({ clock });
  const baseUrl = await t.emulator.listen(0, "127.0.0.1");
  const org = await signupOrg(t.app);
  instanceId = (await runningInstance(t, org)).id;
  api = createServiceClient({ baseUrl, apiKey: org.apiKey });
});
afterAll(async () => {
  await t?.close();
});

/** Pulls events one at a time, so a test can act between them. */
function puller(stream: AsyncGenerator<ResponseStreamEvent, void, undefined>) {
  const seen: ResponseStreamEvent[] = [];
  return {
    seen,
    /** Reads until an event of that type arrives; returns it. */
    async next<T extends ResponseStreamEvent["type"]>(type: T): Promise<Extract<ResponseStreamEvent, { type: T }>> {
      for (;;) {
        const r = await stream.next();
        if (r.done) throw new Error(`stream ended before ${type}`);
        seen.push(r.value);
        if (r.value.type === type) return r.value as Extract<ResponseStreamEvent, { type: T }>;
      }
    },
    async rest(): Promise<void> {
      for await (const e of { [Symbol.asyncIterator]: () => stream }) seen.push(e);
    },
  };
}

async function caught(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

/** The ServiceError `work` fails with (anything else fails the test). */
async function serviceError(work: Promise<unknown>): Promise<ServiceError> {
  const error = await caught(work);
  if (!(error instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${String(error)}`);
  return error;
}

const recall = async (session: string) =>
  outputTextOf(await api.createSessionResponse({ instance_id: instanceId, session_id: session, body: { model: "m", input: "!recall" } }));

describe("streamResponse over the emulator", () => {
  it("yields typed events as the gateway writes them: the first delta long before completion", async () => {
    const p = puller(api.streamSessionResponse({ instance_id: instanceId, session_id: "live", body: { model: "m", input: "!stream 4" } }));
    const created = await p.next("response.created");
    expect(created.response.status).toBe("in_progress");
    const first = await p.next("response.output_text.delta");
    expect(first.delta.length).toBeGreaterThan(0);
    // The clock has not moved: the rest is still to come, and nothing is stored yet.
    expect(p.seen.some((e) => e.type === "response.completed")).toBe(false);
    t.clock.advance(2000);
    const second = await p.next("response.output_text.delta");
    expect(second.sequence_number).toBe(first.sequence_number + 1);
    expect(p.seen.some((e) => e.type === "response.completed")).toBe(false);
    t.clock.advance(2000);
    await p.rest();
    const last = p.seen.at(-1)!;
    expect(last.type).toBe("response.completed");
    if (last.type !== "response.completed") return;
    const text = p.seen.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : [])).join("");
    expect(text).toBe(streamText(600));
    expect(outputTextOf(last.response)).toBe(text);
    expect(last.response.usage.output_tokens).toBe(150);
    expect(await recall("live")).toBe("!stream 4");
  });

  it("the default session and the named-session variant are the same method; stream: true is set by the client", async () => {
    const events: ResponseStreamEvent[] = [];
    for await (const e of api.streamResponse({ instance_id: instanceId, body: { model: "m", input: "hello" } })) events.push(e);
    expect(events.map((e) => e.type)).toContain("response.output_text.delta");
    expect(events.at(-1)?.type).toBe("response.completed");
  });

  it("an AbortSignal ends the stream with its reason, and the gateway stops: nothing is stored", async () => {
    const abort = new AbortController();
    const p = puller(
      api.streamSessionResponse({ instance_id: instanceId, session_id: "stopped", body: { model: "m", input: "!stream 30" }, signal: abort.signal }),
    );
    await p.next("response.output_text.delta");
    abort.abort(new Error("stop asked"));
    const error = await caught(p.rest());
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ message: "stop asked" });
    expect(error).not.toBeInstanceOf(ServiceError);
    // The close travels client -> emulator -> gateway, which cancels its wait.
    await vi.waitFor(() => expect(clock.live()).toBe(0));
    t.clock.advance(30_000);
    expect(await recall("stopped")).toBe("(nothing yet)");
    // An already aborted signal never sends.
    const early = await caught(api.streamResponse({ instance_id: instanceId, body: { model: "m", input: "!stream 1" }, signal: abort.signal }).next());
    expect(early).toMatchObject({ message: "stop asked" });
  });

  it("breaking out of the loop closes the stream: the turn is not stored", async () => {
    for await (const e of api.streamSessionResponse({ instance_id: instanceId, session_id: "left", body: { model: "m", input: "!stream 30" } })) {
      if (e.type === "response.output_text.delta") break;
    }
    await vi.waitFor(() => expect(clock.live()).toBe(0));
    t.clock.advance(30_000);
    expect(await recall("left")).toBe("(nothing yet)");
  });

  it("a stream cut mid-way (gateway reset after 3 deltas) is a ServiceError of kind stream, after those deltas", async () => {
    const rule = await fetch(`${api.baseUrl}/_emulator/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ target: "gateway", instance_id: instanceId, error: "reset", after_deltas: 3, times: 1 }),
    });
    expect(rule.status).toBe(201);
    const p = puller(api.streamSessionResponse({ instance_id: instanceId, session_id: "cut", body: { model: "m", input: "!stream 1" } }));
    await p.next("response.output_text.delta");
    t.clock.advance(1000);
    const error = await serviceError(p.rest());
    expect(error.kind).toBe("stream");
    expect(error.status).toBeUndefined();
    expect(error.retryable).toBe(true);
    expect(p.seen.filter((e) => e.type === "response.output_text.delta")).toHaveLength(3);
    expect(await recall("cut")).toBe("(nothing yet)");
  });

  it("API errors keep their status; an unreachable service is kind network, with no status", async () => {
    const bad = await serviceError(api.streamResponse({ instance_id: instanceId, body: { model: "m", input: "!stream 500" } }).next());
    expect(bad.status).toBe(400);
    expect(bad.code).toBe("invalid_value");
    const missing = await serviceError(api.streamResponse({ instance_id: "no-such-instance", body: { model: "m", input: "hi" } }).next());
    expect(missing.status).toBe(404);
    const offline = createServiceClient({ baseUrl: `http://127.0.0.1:${await deadPort()}` });
    const down = await serviceError(offline.streamResponse({ instance_id: instanceId, body: { model: "m", input: "hi" } }).next());
    expect(down.kind).toBe("network");
    expect(down.status).toBeUndefined();
  });
});

describe("streamResponse against a service that misbehaves", () => {
  /** A server that answers every request with this SSE body. */
  async function serving(body: string) {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(body);
    });
    const { url, close } = await listenOn(server);
    return { client: createServiceClient({ baseUrl: url }), close };
  }
  const frame = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
  const delta = (d: unknown) => ({ type: "response.output_text.delta", sequence_number: 1, item_id: "m", output_index: 0, content_index: 0, delta: d });

  it("a body that ends before a terminal event is kind stream; unknown events pass as unknown_event", async () => {
    const s = await serving(`: a comment\n\n${frame({ type: "response.reasoning.delta", x: 1 })}${frame(delta("hi"))}`);
    const seen: ResponseStreamEvent[] = [];
    const error = await serviceError(
      (async () => {
        for await (const e of s.client.streamResponse({ instance_id: "i", body: { model: "m", input: "x" } })) seen.push(e);
      })(),
    );
    await s.close();
    expect(seen).toEqual([{ type: "unknown_event", event: "response.reasoning.delta", data: { type: "response.reasoning.delta", x: 1 } }, delta("hi")]);
    expect(error.kind).toBe("stream");
    expect(error.status).toBeUndefined();
    expect(error.message).toMatch(/ended before the response completed/);
  });

  it("a malformed known event is kind stream, invalid_stream_event; an error event is kind stream with its code (no invented status)", async () => {
    const s = await serving(frame(delta(42)));
    const error = await serviceError(s.client.streamResponse({ instance_id: "i", body: { model: "m", input: "x" } }).next());
    await s.close();
    expect(error.kind).toBe("stream");
    expect(error.status).toBeUndefined();
    expect(error.code).toBe("invalid_stream_event");
    const e = await serving(frame({ type: "error", code: "rate_limit_exceeded", message: "slow down" }, "error"));
    const failed = await serviceError(e.client.streamResponse({ instance_id: "i", body: { model: "m", input: "x" } }).next());
    await e.close();
    expect(failed.kind).toBe("stream");
    expect(failed.status).toBeUndefined();
    expect(failed.retryable).toBe(true);
    expect(failed.code).toBe("rate_limit_exceeded");
  });
});
