/**
 * The fake model beyond the SDK tests: unscripted defaults for tools and
 * formats, `!file`, failed answers, determinism with a seed, scripted
 * conversations across a restart, and what the console shows of them.
 */
import request from "supertest";
import { describe, expect, it, onTestFinished } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import type { ModelScriptInput } from "../../emulator/gateway/script/index.js";
import { parseEventStream } from "../../shared/client/index.js";
import type { Instance } from "../../shared/schemas/instances.js";
import { runningInstance, signupOrg, startEmulator, tempDir, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator | undefined;

const TOOLS = [
  {
    type: "function",
    name: "lookup",
    parameters: { type: "object", properties: { query: { type: "string" }, limit: { type: "integer" } }, required: ["query", "limit"] },
  },
  { type: "function", name: "notify", parameters: { type: "object", properties: {} } },
];

async function setup(options: Parameters<typeof startEmulator>[0] = {}): Promise<{ org: TestOrg; instance: Instance }> {
  t = forThisTest(await startEmulator(options));
  const org = await signupOrg(t.app);
  return { org, instance: await runningInstance(t, org) };
}

const send = (org: TestOrg, instanceId: string, body: Record<string, unknown>, session = "main") =>
  request(t!.app)
    .post(`/v1/instances/${instanceId}/session/${session}/responses`)
    .set(org.auth)
    .send({ model: "m", ...body });

/** The `type`s of a streamed answer's events, in order, and the events themselves. */
async function streamed(org: TestOrg, instanceId: string, body: Record<string, unknown>) {
  const res = await send(org, instanceId, { ...body, stream: true });
  expect(res.status).toBe(200);
  const parsed = [];
  for await (const event of parseEventStream(
    (async function* () {
      yield res.text;
    })(),
  ))
    parsed.push(event);
  const events = parsed.map((e) => e.data as { type: string; sequence_number: number; [k: string]: unknown });
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  return events;
}

describe("unscripted defaults", () => {
  it("calls the first tool the input names, with arguments made from its parameters", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: "please notify me, or lookup something", tools: TOOLS });
    expect(res.status).toBe(200);
    expect(res.body.output).toHaveLength(1);
    expect(res.body.output[0]).toMatchObject({ type: "function_call", name: "lookup", status: "completed" });
    expect(res.body.output[0].call_id).toMatch(/^call_[0-9a-f]{32}$/);
    expect(JSON.parse(res.body.output[0].arguments)).toEqual({ query: "query", limit: 0 });
    // Tools that the input does not name: the echo, as without tools.
    const plain = await send(org, instance.id, { input: "hello", tools: TOOLS });
    expect(plain.body.output[0].content[0].text).toBe("You said: hello");
  });

  it("answers tool outputs alone with what each call returned", async () => {
    const { org, instance } = await setup();
    const call = await send(org, instance.id, { input: "lookup", tools: TOOLS });
    const callId = call.body.output[0].call_id as string;
    const res = await send(org, instance.id, {
      previous_response_id: call.body.id,
      input: [{ type: "function_call_output", call_id: callId, output: "42 results" }],
    });
    expect(res.body.output[0].content[0].text).toBe(`Tool ${callId} returned: 42 results`);
  });

  it("a schema outside the supported subset is 400, naming what; json_object answers the echo as an object", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, {
      input: "x",
      text: { format: { type: "json_schema", name: "odd", schema: { type: "object", properties: { a: { oneOf: [{ type: "string" }] } } } } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({
      type: "invalid_request_error",
      code: "unsupported_schema",
      param: "text.format.schema",
      message: "The fake model cannot answer schema 'odd': schema.properties.a: keyword 'oneOf' is not supported.",
    });
    const object = await send(org, instance.id, { input: "hi", text: { format: { type: "json_object" } } });
    expect(JSON.parse(object.body.output[0].content[0].text)).toEqual({ text: "You said: hi" });
  });

  it("!file writes a deterministic file into the workspace and names it in a MEDIA line", async () => {
    const { org, instance } = await setup();
    const res = await send(org, instance.id, { input: "!file chart.png" });
    expect(res.body.output[0].content[0].text).toBe("Here is chart.png.\nMEDIA: workspace/chart.png");
    const png = await request(t!.app).get(`/v1/instances/${instance.id}/files/download?path=workspace/chart.png`).set(org.auth).buffer(true);
    expect(png.status).toBe(200);
    expect(
      Buffer.from(png.body as Buffer)
        .subarray(0, 8)
        .toString("hex"),
    ).toBe("89504e470d0a1a0a");
    await send(org, instance.id, { input: "!file notes pdf" });
    const pdf = await request(t!.app).get(`/v1/instances/${instance.id}/files/download?path=workspace/notes`).set(org.auth).buffer(true);
    expect(Buffer.from(pdf.body as Buffer).toString("latin1")).toMatch(/^%PDF-1\.4\n[\s\S]*%%EOF\n$/);
    const bad = await send(org, instance.id, { input: "!file ../escape.txt" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe("Directive !file needs a plain file name (letters, digits, . _ -), got '../escape.txt'.");
  });
});

describe("failed answers", () => {
  const script: ModelScriptInput = {
    rules: [
      { name: "fails", match: { input: "fail late" }, answer: { failed: { code: "server_error", message: "The model fell over." } } },
      { name: "errors", match: { input: "error event" }, answer: { failed: { code: "overloaded", message: "Busy.", event: "error" } } },
    ],
  };

  it("streams response.failed, answers the same status unstreamed, and stores nothing", async () => {
    const { org, instance } = await setup({ modelScript: script });
    const events = await streamed(org, instance.id, { input: "fail late" });
    expect(events.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(events[2]!.response).toMatchObject({ status: "failed", error: { code: "server_error", message: "The model fell over." } });
    const whole = await send(org, instance.id, { input: "fail late" });
    expect(whole.body).toMatchObject({ status: "failed", error: { code: "server_error" } });
    const turns = await request(t!.app).get(`/_emulator/console/instances/${instance.id}/sessions/main`);
    expect(turns.body).toMatchObject({ head_id: null, turns: [] });
  });

  it("can end a stream with a bare error event", async () => {
    const { org, instance } = await setup({ modelScript: script });
    const events = await streamed(org, instance.id, { input: "error event" });
    expect(events.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "error"]);
    expect(events[2]).toMatchObject({ code: "overloaded", message: "Busy.", param: null });
  });
});

describe("visibility", () => {
  it("the request log shows the rule that answered, in the response it logged", async () => {
    const { org, instance } = await setup({ modelScript: { rules: [{ name: "greeter", match: { input: "hi" }, answer: { text: "Hello." } }] } });
    await send(org, instance.id, { input: "hi" });
    await send(org, instance.id, { input: "unscripted" });
    const lines = (await request(t!.app).get("/_emulator/console/requests")).body as { id: number; path: string }[];
    const calls = lines.filter((l) => l.path.endsWith("/session/main/responses"));
    expect(calls).toHaveLength(2);
    const detail = async (id: number) => (await request(t!.app).get(`/_emulator/console/requests/${id}`)).body.response.body;
    expect((await detail(calls[0]!.id)).metadata).toEqual({ emulator_rule: "greeter" });
    expect((await detail(calls[1]!.id)).metadata).toBeUndefined();
  });
});

describe("determinism and restarts", () => {
  const script: ModelScriptInput = {
    rules: [
      { name: "call", match: { input: "go", tools: true }, answer: { tool_calls: [{ name: "lookup", arguments: { query: "q", limit: 1 } }] } },
      { name: "after call", match: { function_call_output: true }, answer: { reasoning: "Read the output.", output: { found: 1 } } },
    ],
  };

  it("the same seed gives the same ids and call ids", async () => {
    const run = async () => {
      const { org, instance } = await setup({ seed: "same", modelScript: script });
      const res = await send(org, instance.id, { input: "go", tools: TOOLS });
      const ids = { response: res.body.id, item: res.body.output[0].id, call: res.body.output[0].call_id };
      await t!.close();
      t = undefined;
      return ids;
    };
    const first = await run();
    expect(first.call).toMatch(/^call_[0-9a-f]{32}$/);
    expect(await run()).toEqual(first);
  });

  it("a scripted conversation continues after a restart with the data directory, and the console shows its items", async () => {
    const dir = tempDir();
    onTestFinished(dir.remove);
    const { org, instance } = await setup({ dataDir: dir.path, seed: 7, modelScript: script });
    const call = await send(org, instance.id, { input: "go", tools: TOOLS }, "s");
    expect(call.headers["x-emulator-model-rule"]).toBe("call");
    await t!.close();

    t = forThisTest(await startEmulator({ dataDir: dir.path, seed: 7, modelScript: script }));
    const res = await send(
      org,
      instance.id,
      { previous_response_id: call.body.id, input: [{ type: "function_call_output", call_id: call.body.output[0].call_id, output: "{}" }] },
      "s",
    );
    expect(res.status).toBe(200);
    expect(res.body.output.map((o: { type: string }) => o.type)).toEqual(["reasoning", "message"]);
    expect(JSON.parse(res.body.output[1].content[0].text)).toEqual({ found: 1 });

    const turns = await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions/s`);
    expect(turns.status).toBe(200);
    expect(turns.body.turns.map((turn: { answer?: unknown }) => turn.answer)).toEqual([
      {
        rule: "call",
        status: "completed",
        items: [{ type: "function_call", call_id: call.body.output[0].call_id, name: "lookup", arguments: '{"query":"q","limit":1}' }],
      },
      {
        rule: "after call",
        status: "completed",
        items: [
          { type: "reasoning", summary: "Read the output." },
          { type: "message", text: '{"found":1}', json: true },
        ],
      },
    ]);
  });
});
