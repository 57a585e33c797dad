/**
 * `!stream S [N]`: the fake gateway answers in real time on its injected
 * clock. A manual clock drives it here, so "spread evenly over S seconds" is
 * checked exactly: every delta is stamped with the clock's time when it was
 * read, and the clock only moves when the test moves it.
 */
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { request } from "undici";
import type { ManualClock } from "../../shared/clock.js";
import { createCountedClock } from "../helpers/counted-clock.js";
import { cryptoRandom } from "../../shared/random.js";
import { createGateway, headKey, type GatewayFault, type GatewayState } from "../../emulator/gateway/index.js";
import { streamText } from "../../emulator/gateway/model.js";
import { deltaDueAt, pacedDeltas } from "../../emulator/gateway/wire.js";
import { z } from "zod";
import { ResponseObject, outputTextOf } from "../../shared/schemas/responses.js";
import { ofType, readSse } from "../helpers/sse.js";

const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string(), param: z.string().nullable() }) });
const Completed = z.object({ response: ResponseObject });

async function start(faults = new Map<string, GatewayFault>()) {
  const clock = createCountedClock();
  const manual: ManualClock = clock;
  const live = () => clock.live();
  const state: GatewayState = { responses: {}, heads: {} };
  const gateway = createGateway({ state: () => state, onChange: () => {}, clock, random: cryptoRandom, faultFor: (id) => faults.get(id) });
  await gateway.listen(0);
  onTestFinished(() => gateway.close());
  const post = (instance: string, body: unknown, signal?: AbortSignal) =>
    request(`${gateway.urlFor(instance)}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-key": "s" },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  return { gateway, state, manual, live, post };
}

describe("!stream S [N]", () => {
  it("spreads the deltas of ~600 characters evenly over S seconds: the first at once, the last at S", async () => {
    const h = await start();
    const res = await h.post("i", { model: "m", input: "!stream 2", stream: true });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
    const t0 = h.manual.now();
    const sse = readSse(res.body, h.manual.now);
    const text = streamText(600);
    const expected = pacedDeltas(text, 2000);
    expect(expected.length).toBeGreaterThan(10);

    // The first delta comes before the clock moves at all; nothing is stored yet.
    await sse.until(() => sse.deltas().length === 1);
    expect(ofType(sse.events, "response.created")).toHaveLength(1);
    expect(Object.keys(h.state.responses)).toHaveLength(0);
    // Each next delta comes exactly when it is due, and not before.
    for (let i = 1; i < expected.length; i++) {
      h.manual.set(t0 + deltaDueAt(i, expected.length, 2000));
      await sse.until(() => sse.deltas().length === i + 1);
    }
    await sse.done;
    const stamps = ofType(sse.events, "response.output_text.delta").map((e) => e.at - t0);
    expect(stamps).toEqual(expected.map((_, i) => deltaDueAt(i, expected.length, 2000)));
    expect(stamps.at(-1)).toBe(2000);
    // Evenly: gaps differ by at most the 1 ms of rounding.
    const gaps = stamps.slice(1).map((s, i) => s - stamps[i]!);
    expect(Math.max(...gaps) - Math.min(...gaps)).toBeLessThanOrEqual(1);

    expect(sse.deltas().join("")).toBe(text);
    expect(text).toHaveLength(600);
    expect(text).toContain("\n\n```ts\n");
    expect(text.split("\n\n").length).toBeGreaterThanOrEqual(4);
    const types = sse.events.map((e) => e.event);
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    // Stored once complete, as the session's head.
    const completed = Completed.parse(ofType(sse.events, "response.completed")[0]!.data);
    expect(h.state.heads[headKey("i", "s")]).toBe(completed.response.id);
    expect(h.live()).toBe(0);
  });

  it("!stream S N makes N characters; decimals are allowed", async () => {
    const h = await start();
    const res = await h.post("i", { model: "m", input: "!stream 0.25 9000", stream: true });
    const sse = readSse(res.body, h.manual.now);
    await sse.until(() => sse.deltas().length === 1);
    h.manual.advance(250);
    await sse.done;
    expect(sse.deltas().join("")).toBe(streamText(9000));
    expect(streamText(9000)).toHaveLength(9000);
    // 250 ms at most one delta per 10 ms: the pieces grow rather than crowd.
    expect(sse.deltas().length).toBeLessThanOrEqual(26);
  });

  it("without stream: true it waits S seconds on the clock, then answers the whole text", async () => {
    const h = await start();
    let answered = false;
    const pending = h.post("i", { model: "m", input: "!stream 1.5 50" }).then(async (res) => {
      answered = true;
      return { status: res.statusCode, body: ResponseObject.parse(await res.body.json()) };
    });
    await vi.waitFor(() => expect(h.live()).toBe(1));
    h.manual.advance(1499);
    expect(answered).toBe(false);
    h.manual.advance(1);
    const { status, body } = await pending;
    expect(status).toBe(200);
    expect(outputTextOf(body)).toBe(streamText(50));
  });

  it("refuses bad arguments with a 400 naming the directive", async () => {
    const h = await start();
    for (const input of ["!stream", "!stream 121", "!stream -1", "!stream abc", "!stream 1.2345", "!stream 5 x", "!stream 5 -3", "!stream 1e2"]) {
      const res = await h.post("i", { model: "m", input, stream: true });
      const body = ErrorBody.parse(await res.body.json());
      expect(res.statusCode, input).toBe(400);
      expect(body.error).toMatchObject({ code: "invalid_value", param: "input" });
      expect(body.error.message).toMatch(/!stream/);
    }
    expect(Object.keys(h.state.responses)).toHaveLength(0);
  });

  it("a client that closes the stream stops it: no more timers, nothing stored", async () => {
    const h = await start();
    const abort = new AbortController();
    const res = await h.post("i", { model: "m", input: "!stream 30", stream: true }, abort.signal);
    const sse = readSse(res.body, h.manual.now);
    await sse.until(() => sse.deltas().length === 1);
    expect(h.live()).toBe(1);
    abort.abort();
    await vi.waitFor(() => expect(h.live()).toBe(0));
    h.manual.advance(30_000);
    expect(h.state.responses).toEqual({});
    expect(h.state.heads).toEqual({});
  });

  it("fault reset with resetAfterDeltas cuts the stream after that many deltas, storing nothing", async () => {
    const h = await start(new Map([["cut", { error: "reset", resetAfterDeltas: 3 }]]));
    const res = await h.post("cut", { model: "m", input: "!stream 0.5", stream: true });
    const sse = readSse(res.body, h.manual.now);
    h.manual.advance(500);
    await expect(sse.done).rejects.toThrow();
    expect(sse.deltas()).toHaveLength(3);
    expect(ofType(sse.events, "response.completed")).toHaveLength(0);
    expect(h.state.responses).toEqual({});
    // Plain (unpaced) streams are cut the same way; a non-streamed request is reset at once.
    const plain = await h.post("cut", { model: "m", input: "!long 1000", stream: true });
    const plainSse = readSse(plain.body, h.manual.now);
    await expect(plainSse.done).rejects.toThrow();
    expect(plainSse.deltas()).toHaveLength(3);
    await expect(h.post("cut", { model: "m", input: "hi" })).rejects.toThrow();
    expect(h.state.responses).toEqual({});
  });
});
