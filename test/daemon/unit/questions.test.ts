/** The pure steps of questions with buttons (core/questions/): tools, calls, answers, the input a turn sends. */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { answerUnofferedCalls, composeInput, planInput, sortCalls } from "../../../daemon/core/questions/questions.js";
import { functionCallsOf, questionOf, readAnswer, toolDeclarations } from "../../../daemon/core/questions/tools.js";
import type { JournalEntry, OpenQuestion } from "../../../daemon/vocabulary/records.js";

const question: OpenQuestion = {
  id: "q1",
  callId: "call_1",
  tool: "choice",
  text: "Deploy where?",
  options: ["staging", "production"],
  allowText: false,
  askerId: "u1",
  askedAt: 0,
  expiresAt: 60_000,
  otherOutputs: [],
};

let seq = 0;
function entry(text: string, extra: Partial<JournalEntry["message"]> = {}): JournalEntry {
  seq++;
  return {
    id: `e${seq}`,
    seq,
    kind: "turn",
    key: `k${seq}` as JournalEntry["key"],
    acceptedAt: seq,
    sent: 0,
    route: { ruleIndex: 0, instanceId: "i", model: "m", scope: "chat", sessionBase: "s" },
    message: { platform: "p", accountId: "a", chatId: "c", chatType: "direct", userId: "u1", userName: "Ann", messageId: `m${seq}`, text, sentAt: 0, ...extra },
  };
}

describe("tools", () => {
  it("declares only the enabled tools, with 2-10 options", () => {
    expect(toolDeclarations([])).toEqual([]);
    expect(toolDeclarations(["confirm"]).map((t) => t.name)).toEqual(["ask_confirmation"]);
    const [choice] = toolDeclarations(["choice"]);
    expect(choice?.parameters).toMatchObject({ properties: { options: { minItems: 2, maxItems: 10 } } });
  });

  it("reads function calls and turns an offered one into a question; others get an error output", () => {
    const calls = functionCallsOf({
      output: [
        { type: "message", content: [] },
        { type: "function_call", call_id: "c1", name: "ask_choice", arguments: '{"question":"Q?","options":["a","b"],"allow_text":true}' },
        { type: "function_call", call_id: "c2", name: "rm_rf", arguments: "{}" },
        { type: "function_call", name: "broken" },
      ],
    });
    expect(calls.map((c) => c.callId)).toEqual(["c1", "c2"]);
    expect(questionOf(calls[0]!, ["choice"])).toEqual({
      ok: true,
      question: { callId: "c1", tool: "choice", text: "Q?", options: ["a", "b"], allowText: true },
    });
    expect(questionOf(calls[0]!, ["confirm"])).toMatchObject({ ok: false });
    expect(questionOf({ callId: "c3", name: "ask_choice", arguments: '{"question":"Q","options":["only one"]}' }, ["choice"])).toMatchObject({ ok: false });
    const sorted = sortCalls(calls, ["choice"]);
    expect(sorted.question?.question.callId).toBe("c1");
    expect(sorted.outputs).toEqual([{ callId: "c2", output: 'Error: the tool "rm_rf" is not available here.' }]);
  });

  it("reads an answer by number or option text; free text only where allowed", () => {
    expect(readAnswer(question, " 2 ")).toEqual({ kind: "option", index: 1 });
    expect(readAnswer(question, "Staging")).toEqual({ kind: "option", index: 0 });
    expect(readAnswer(question, "3")).toEqual({ kind: "none" });
    expect(readAnswer({ ...question, allowText: true }, "3")).toEqual({ kind: "text", text: "3" });
  });
});

describe("the input of a turn", () => {
  it("no question: the entries' text, taps left out", () => {
    const typed = entry("hello");
    const stale = entry("1", { answers: { questionId: "old" } });
    expect(planInput(undefined, [typed, stale])).toEqual({ textEntries: [typed] });
  });

  it("a tap answers with its option, by whom", () => {
    const plan = planInput(question, [entry("2", { answers: { questionId: "q1" } })]);
    expect(plan.answer).toMatchObject({ output: "production", shown: "production: chosen by Ann" });
    expect(composeInput(plan, undefined)).toEqual([{ type: "function_call_output", call_id: "call_1", output: "production" }]);
  });

  it("a typed reply that is no answer closes the question and goes on as the person's message", () => {
    const typed = entry("what about tomorrow?");
    const plan = planInput(question, [typed]);
    expect(plan.textEntries).toEqual([typed]);
    expect(composeInput(plan, "what about tomorrow?")).toEqual([
      { type: "function_call_output", call_id: "call_1", output: expect.stringMatching(/^No answer/) },
      { role: "user", content: "what about tomorrow?" },
    ]);
  });

  it("the answer's other calls get their outputs with it; a stopped or expired question says there was no answer", () => {
    const withOthers = { ...question, otherOutputs: [{ callId: "c9", output: "Error: no" }] };
    expect(composeInput(planInput(withOthers, [entry("1")]), undefined)).toEqual([
      { type: "function_call_output", call_id: "call_1", output: "staging" },
      { type: "function_call_output", call_id: "c9", output: "Error: no" },
    ]);
    expect(planInput({ ...question, closed: "stopped" }, [entry("1")]).answer?.output).toMatch(/stopped/);
    expect(planInput(question, [entry("(no answer)", { answers: { questionId: "q1", closed: "expired" } })]).answer?.output).toMatch(/in time/);
  });
});

describe("calls to tools the bridge does not offer", () => {
  const log = pino({ level: "silent" });
  type O = { ok: true; text: string; calls: { callId: string; name: string; arguments: string }[]; contextReset: boolean } | { ok: false };

  it("are answered with an error output at once and the agent's next answer taken, its text after the first's", async () => {
    const sent: unknown[] = [];
    const first: O = { ok: true, text: "Let me look.", calls: [{ callId: "c1", name: "search", arguments: "{}" }], contextReset: false };
    const outcome = await answerUnofferedCalls<O>(
      first,
      ["choice"],
      async (_answer, outputs) => {
        sent.push(outputs);
        return { ok: true, text: "I cannot search here.", calls: [], contextReset: false };
      },
      log,
      {},
    );
    expect(sent).toEqual([[{ type: "function_call_output", call_id: "c1", output: 'Error: the tool "search" is not available here.' }]]);
    expect(outcome).toMatchObject({ ok: true, text: "Let me look.\n\nI cannot search here." });
  });

  it("stop after a few rounds, and leave an answer with a question alone", async () => {
    let rounds = 0;
    const looping: O = { ok: true, text: "", calls: [{ callId: "c", name: "search", arguments: "{}" }], contextReset: false };
    await answerUnofferedCalls<O>(looping, [], async () => (rounds++, looping), log, {});
    expect(rounds).toBe(3);
    const asking: O = { ok: true, text: "", calls: [{ callId: "c", name: "ask_confirmation", arguments: '{"summary":"x"}' }], contextReset: false };
    await answerUnofferedCalls<O>(asking, ["confirm"], async () => (rounds++, asking), log, {});
    expect(rounds).toBe(3);
  });
});
