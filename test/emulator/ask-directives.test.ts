/**
 * `!ask` and `!confirm`: the fake model calls the bridge's button tools (ask_choice,
 * ask_confirmation) where the request offers them, as a model that needs a decision would, so the
 * bridge's buttons can be shown offline. Driven by the official `openai` SDK, the answer going back
 * as the call's output on the same chain.
 */
import OpenAI, { BadRequestError } from "openai";
import { describe, expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { runningInstance, signupOrg, startEmulator, type TestEmulator } from "../helpers/emulator.js";

const CHOICE = {
  type: "function" as const,
  name: "ask_choice",
  parameters: {
    type: "object",
    properties: { question: { type: "string" }, options: { type: "array", items: { type: "string" } }, allow_text: { type: "boolean" } },
    required: ["question", "options", "allow_text"],
    additionalProperties: false,
  },
  strict: true,
};
const CONFIRM = {
  type: "function" as const,
  name: "ask_confirmation",
  parameters: { type: "object", properties: { summary: { type: "string" } }, required: ["summary"], additionalProperties: false },
  strict: true,
};

let t: TestEmulator;

async function client(): Promise<OpenAI> {
  t = forThisTest(await startEmulator());
  const url = await t.emulator.listen();
  const org = await signupOrg(t.app);
  const instance = await runningInstance(t, org);
  return new OpenAI({ apiKey: org.apiKey, baseURL: `${url}/v1/instances/${instance.id}/session/chat-1`, maxRetries: 0 });
}

describe("!ask and !confirm", () => {
  it("!ask with the choice tool offered: a sentence, then a call with the question and options; the output continues the chain", async () => {
    const openai = await client();
    const first = await openai.responses.create({ model: "m", input: "!ask Deploy where? | staging | production | *", tools: [CHOICE, CONFIRM] });
    expect(first.output.map((o) => o.type)).toEqual(["message", "function_call"]);
    expect(first.output_text).toBe("I need a decision.");
    const call = first.output[1]!;
    if (call.type !== "function_call") throw new Error("not a function call");
    expect(call.name).toBe("ask_choice");
    expect(JSON.parse(call.arguments)).toEqual({ question: "Deploy where?", options: ["staging", "production"], allow_text: true });

    const second = await openai.responses.create({
      model: "m",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ answer: "production", by: "alice" }) }],
      tools: [CHOICE, CONFIRM],
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output_text).toBe(`Tool ${call.call_id} returned: {"answer":"production","by":"alice"}`);
  });

  it("a response that called a tool is continued only with the call's output, as OpenAI's API requires", async () => {
    const openai = await client();
    const first = await openai.responses.create({ model: "m", input: "!confirm Delete the branch", tools: [CHOICE, CONFIRM] });
    const call = first.output.find((o) => o.type === "function_call");
    if (call?.type !== "function_call") throw new Error("no call");
    const error = await openai.responses
      .create({ model: "m", previous_response_id: first.id, input: "never mind", tools: [CHOICE, CONFIRM] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain(`No tool output found for function call ${call.call_id}.`);
    expect((error as BadRequestError).param).toBe("input");
    // With the output (and the person's words beside it) the chain goes on.
    const next = await openai.responses.create({
      model: "m",
      previous_response_id: first.id,
      input: [
        { type: "function_call_output", call_id: call.call_id, output: "denied" },
        { role: "user", content: "never mind" },
      ],
      tools: [CHOICE, CONFIRM],
    });
    expect(next.previous_response_id).toBe(first.id);
  });

  it("!confirm with the confirmation tool offered calls it with the summary", async () => {
    const openai = await client();
    const answer = await openai.responses.create({ model: "m", input: "!confirm Send the invoice to ACME", tools: [CHOICE, CONFIRM] });
    const call = answer.output.find((o) => o.type === "function_call");
    expect(call?.type === "function_call" && call.name).toBe("ask_confirmation");
    expect(call?.type === "function_call" && JSON.parse(call.arguments)).toEqual({ summary: "Send the invoice to ACME" });
  });

  it("without the tools the question is asked in prose, and a malformed directive is a 400 that names the form", async () => {
    const openai = await client();
    expect((await openai.responses.create({ model: "m", input: "!ask Which? | a | b" })).output_text).toBe("Which?\n1. a\n2. b");
    expect((await openai.responses.create({ model: "m", input: "!confirm Delete it" })).output_text).toBe("Delete it\nShall I go ahead? (yes or no)");
    for (const input of ["!ask Which? | only one", "!ask | a | b", `!ask Q ${"| o ".repeat(11)}`, "!confirm"]) {
      const error = await openai.responses.create({ model: "m", input, tools: [CHOICE, CONFIRM] }).catch((e: unknown) => e);
      expect(error, input).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).code).toBe("invalid_value");
    }
  });
});
