/**
 * The scripted fake model driven by the official `openai` SDK (a client
 * nobody here wrote), through both message routes of the API: tools and a
 * `function_call_output` round trip, streams with the SDK's event helpers,
 * structured output with a zod schema, and SDK errors of the right class.
 */
import OpenAI, { BadRequestError, RateLimitError } from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import request from "supertest";
import { describe, expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { z } from "zod";
import type { ModelScriptInput } from "../../emulator/gateway/script/index.js";
import { createEmulator } from "../../emulator/index.js";
import { createManualClock } from "../../shared/clock.js";
import type { Instance } from "../../shared/schemas/instances.js";
import { runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

const SCRIPT: ModelScriptInput = {
  rules: [
    {
      name: "weather call",
      match: { contains: "weather", tools: true },
      answer: { tool_calls: [{ name: "get_weather", arguments: { city: "Paris" }, call_id: "call_weather_1" }] },
    },
    { name: "weather result", match: { function_call_output: "call_weather_1" }, answer: { text: "It is sunny in Paris." } },
    { name: "thinker", match: { input: "think" }, answer: { reasoning: "Weighing it up.", text: "Done thinking." } },
    { name: "refuser", match: { input: "refuse me" }, answer: { refusal: "I cannot help with that." } },
    { name: "busy", match: { input: "busy" }, times: 1, answer: { error: { status: 429, retry_after: 0 } } },
    { name: "limited", match: { input: "limited" }, answer: { error: { status: 429, retry_after: 30, hold: true } } },
    { name: "briefly limited", match: { input: "briefly" }, answer: { error: { status: 429, retry_after: 0.05, hold: true } } },
    {
      name: "too long",
      match: { input: "huge" },
      answer: { error: { status: 400, code: "context_length_exceeded", param: "input", message: "This model's maximum context length is 8 tokens." } },
    },
    { name: "person", match: { format: true, contains: "person" }, answer: { output: { name: "Ada", age: 36 } } },
    { name: "cut", match: { input: "cut" }, answer: { text: "abcdefghijklmnopqrstuvwxyz", incomplete: true } },
    { name: "second turn in b", match: { session: "b", turn: 2 }, answer: { text: "second in b" } },
    { name: "pirate", match: { instructions: "pirate" }, answer: { text: "Arr." } },
  ],
};

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: true,
};

let t: TestEmulator;

interface Setup {
  org: TestOrg;
  instance: Instance;
  url: string;
  /** The default session's route. */
  main: OpenAI;
  /** A named session's route. */
  session: (name: string) => OpenAI;
}

async function setup(options: { maxRetries?: number; realClock?: boolean } = {}): Promise<Setup> {
  if (options.realClock) {
    const emulator = await createEmulator({ provisionMs: 0, validateResponses: true, modelScript: SCRIPT });
    t = forThisTest({ emulator, app: emulator.app, clock: createManualClock(), errorLog: [], close: () => emulator.close() });
  } else t = forThisTest(await startEmulator({ modelScript: SCRIPT }));
  const url = await t.emulator.listen();
  const org = await signupOrg(t.app);
  const instance = await runningInstance(t, org);
  const client = (baseURL: string) => new OpenAI({ apiKey: org.apiKey, baseURL, maxRetries: options.maxRetries ?? 0 });
  return {
    org,
    instance,
    url,
    main: client(`${url}/v1/instances/${instance.id}`),
    session: (name) => client(`${url}/v1/instances/${instance.id}/session/${encodeURIComponent(name)}`),
  };
}

describe("tools", () => {
  it("answers a scripted function call, and the function_call_output continues the chain", async () => {
    const { main } = await setup();
    const first = await main.responses.create({ model: "m", input: "What is the weather in Paris?", tools: [WEATHER_TOOL] });
    expect(first.status).toBe("completed");
    expect(first.output).toHaveLength(1);
    const call = first.output[0]!;
    expect(call).toMatchObject({ type: "function_call", call_id: "call_weather_1", name: "get_weather", status: "completed" });
    if (call.type !== "function_call") throw new Error("not a function call");
    expect(JSON.parse(call.arguments)).toEqual({ city: "Paris" });
    expect(first.metadata).toEqual({ emulator_rule: "weather call" });

    const second = await main.responses.create({
      model: "m",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ sky: "clear" }) }],
      tools: [WEATHER_TOOL],
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output_text).toBe("It is sunny in Paris.");
  });

  it("spans sessions: a call made in one session is answered from another through previous_response_id", async () => {
    const { session } = await setup();
    const a = session("a");
    const b = session("b");
    const call = await a.responses.create({ model: "m", input: "weather please", tools: [WEATHER_TOOL] });
    expect(call.output[0]).toMatchObject({ type: "function_call", call_id: "call_weather_1" });
    const first = await b.responses.create({ model: "m", input: "hello" });
    expect(first.output_text).toBe("You said: hello");
    // The second turn of session b (the rule matches the session and the turn number).
    const second = await b.responses.create({ model: "m", input: "again" });
    expect(second.output_text).toBe("second in b");
    // From session b, continuing session a's chain with the tool's output.
    const result = await b.responses.create({
      model: "m",
      previous_response_id: call.id,
      input: [{ type: "function_call_output", call_id: "call_weather_1", output: "sunny" }],
    });
    expect(result.previous_response_id).toBe(call.id);
    expect(result.output_text).toBe("It is sunny in Paris.");
  });
});

describe("instructions", () => {
  it("a rule can match the request's instructions, and the response echoes them", async () => {
    const { main } = await setup();
    const answer = await main.responses.create({ model: "m", instructions: "Talk like a pirate.", input: "hello" });
    expect(answer.output_text).toBe("Arr.");
    expect(answer.instructions).toBe("Talk like a pirate.");
    expect((await main.responses.create({ model: "m", input: "hello" })).output_text).toBe("You said: hello");
  });
});

describe("streams", () => {
  it("streams text through the SDK's helpers, the deltas adding up to the final text", async () => {
    const { session } = await setup();
    const deltas: string[] = [];
    const stream = session("s1").responses.stream({ model: "m", input: "think" });
    stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
    const types: string[] = [];
    stream.on("event", (event) => types.push(event.type));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe("Done thinking.");
    expect(deltas.join("")).toBe("Done thinking.");
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
  });

  it("streams function-call arguments through the SDK's helpers", async () => {
    const { main } = await setup();
    const stream = main.responses.stream({ model: "m", input: "weather in Paris", tools: [WEATHER_TOOL] });
    const deltas: string[] = [];
    let done: { name: string; arguments: string } | undefined;
    stream.on("response.function_call_arguments.delta", (event) => deltas.push(event.delta));
    stream.on("response.function_call_arguments.done", (event) => {
      done = { name: event.name, arguments: event.arguments };
    });
    const final = await stream.finalResponse();
    expect(deltas.join("")).toBe('{"city":"Paris"}');
    expect(done).toEqual({ name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(final.output[0]).toMatchObject({ type: "function_call", call_id: "call_weather_1", arguments: '{"city":"Paris"}' });
  });

  it("streams a refusal with its own events", async () => {
    const { main } = await setup();
    const stream = main.responses.stream({ model: "m", input: "refuse me" });
    const refusal: string[] = [];
    stream.on("response.refusal.delta", (event) => refusal.push(event.delta));
    const final = await stream.finalResponse();
    expect(refusal.join("")).toBe("I cannot help with that.");
    expect(final.output[0]).toMatchObject({ type: "message", content: [{ type: "refusal", refusal: "I cannot help with that." }] });
  });

  it("ends an answer cut at max_output_tokens with response.incomplete, and the body says the same", async () => {
    const { main } = await setup();
    const events: string[] = [];
    const stream = await main.responses.create({ model: "m", input: "cut", max_output_tokens: 2, stream: true });
    let last: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      events.push(event.type);
      if (event.type === "response.incomplete") last = event.response;
    }
    expect(events.at(-1)).toBe("response.incomplete");
    expect(last).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
    expect(last?.output[0]).toMatchObject({ type: "message", status: "incomplete", content: [{ type: "output_text", text: "abcdefgh" }] });
    const whole = await main.responses.create({ model: "m", input: "cut", max_output_tokens: 2 });
    expect(whole).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
    expect(whole.output_text).toBe("abcdefgh");
  });
});

describe("structured output", () => {
  const Person = z.object({ name: z.string(), age: z.number().int() });

  it("parses a scripted object with a zod schema", async () => {
    const { session } = await setup();
    const parsed = await session("forms").responses.parse({ model: "m", input: "a person please", text: { format: zodTextFormat(Person, "person") } });
    expect(parsed.output_parsed).toEqual({ name: "Ada", age: 36 });
  });

  it("answers an unscripted schema with a deterministic object that satisfies it", async () => {
    const { main } = await setup();
    const City = z.object({ city: z.string(), rank: z.number(), tags: z.array(z.enum(["big", "old"])), capital: z.boolean().nullable() });
    const parsed = await main.responses.parse({ model: "m", input: "a city", text: { format: zodTextFormat(City, "city") } });
    expect(parsed.output_parsed).toEqual({ city: "city", rank: 0, tags: ["big"], capital: false });
  });

  it("refuses a scripted object that misses the request's schema, naming where", async () => {
    const { main } = await setup();
    const Other = z.object({ name: z.string(), email: z.string() });
    const error = await main.responses.parse({ model: "m", input: "a person", text: { format: zodTextFormat(Other, "other") } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).code).toBe("script_output_mismatch");
    expect((error as BadRequestError).message).toContain("'other': $.email: required property is missing");
  });
});

describe("errors", () => {
  it("a scripted 429 is the SDK's RateLimitError, with retry-after", async () => {
    const { main } = await setup();
    const error = await main.responses.create({ model: "m", input: "busy" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const limited = error as RateLimitError;
    expect(limited.status).toBe(429);
    expect(limited.type).toBe("rate_limit_error");
    expect(limited.code).toBe("rate_limit_exceeded");
    expect(limited.headers.get("retry-after")).toBe("0");
    expect(limited.headers.get("retry-after-ms")).toBe("0");
  });

  it("the SDK's own retry gets the answer once the rule has fired its times", async () => {
    const { session } = await setup({ maxRetries: 2 });
    const answer = await session("retry").responses.create({ model: "m", input: "busy" });
    expect(answer.output_text).toBe("You said: busy");
    const journal = await request(t.app).get("/_emulator/requests");
    const calls = (journal.body as { path: string; status: number }[]).filter((r) => r.path.endsWith("/session/retry/responses"));
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    const script = await request(t.app).get("/_emulator/model-script");
    expect(script.body.hits).toMatchObject({ busy: 1 });
  });

  it("a held rate limit lifts once retry-after has passed on the emulator's clock", async () => {
    const { main } = await setup();
    const limited = async () => {
      const error = await main.responses.create({ model: "m", input: "limited" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitError);
      expect((error as RateLimitError).headers.get("retry-after")).toBe("30");
    };
    await limited();
    t.clock.advance(29_000);
    await limited();
    t.clock.advance(1_000);
    expect((await main.responses.create({ model: "m", input: "limited" })).output_text).toBe("You said: limited");
  });

  it("the SDK's own retry waits what retry-after-ms says: one retry, after the limit has lifted", async () => {
    // The emulator on the system clock: the SDK sleeps for real, 50 ms. Had it retried sooner, the
    // held limit would have answered 429 again; a loaded machine only makes the wait longer.
    const { session } = await setup({ maxRetries: 3, realClock: true });
    const answer = await session("brief").responses.create({ model: "m", input: "briefly" });
    expect(answer.output_text).toBe("You said: briefly");
    const journal = await request(t.app).get("/_emulator/requests");
    const calls = (journal.body as { path: string; status: number }[]).filter((r) => r.path.endsWith("/session/brief/responses"));
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
  });

  it("a context-length error is the SDK's BadRequestError with code context_length_exceeded", async () => {
    const { session } = await setup();
    const error = await session("x")
      .responses.create({ model: "m", input: "huge" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, code: "context_length_exceeded", param: "input", type: "invalid_request_error" });
  });

  it("an unknown previous_response_id is the SDK's BadRequestError in the OpenAI error shape", async () => {
    const { main } = await setup();
    const error = await main.responses.create({ model: "m", input: "x", previous_response_id: `resp_${"0".repeat(32)}` }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ code: "previous_response_not_found", param: "previous_response_id" });
  });
});
