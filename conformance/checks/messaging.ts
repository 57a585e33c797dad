/** Messages to the run's instance, plain and streamed, and the gateway's own errors. */
import { outputTextOf, type ResponseObject } from "../../shared/schemas/responses.js";
import type { Exchange } from "../exchange.js";
import { type Check, type CheckContext, expectInvalid, expectStatus, field, jsonObject, stringField, that } from "../check.js";

/** Default model per provider when `--model` is not given (the emulator echoes any). */
const MODELS: Record<string, string> = { anthropic: "claude-haiku-4-5", openai: "gpt-4.1-mini", gemini: "gemini-2.5-flash" };
const modelOf = (ctx: CheckContext): string => ctx.run.model ?? MODELS[ctx.facts.provider ?? ""] ?? "default";

const INPUT = "Reply with one short sentence: the conformance kit says hello.";
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

function expectResponse(ex: Exchange): ResponseObject {
  expectStatus(ex, 200);
  const body = jsonObject(ex);
  that(body.object === "response", `object is ${JSON.stringify(body.object)}, expected "response"`);
  that(typeof body.id === "string" && body.id.length > 0, "the response has no id");
  return body as ResponseObject;
}

/** The streamed answer's rules: ordered sequence numbers, created first, one terminal event last, deltas that add up. */
function checkStream(ex: Exchange): void {
  expectStatus(ex, 200);
  that(ex.headers["content-type"]?.startsWith("text/event-stream"), `content-type is ${ex.headers["content-type"]}, expected text/event-stream`);
  const events = ex.events ?? [];
  that(events.length >= 2, `${events.length} events, expected at least response.created and a terminal one`);
  const types = events.map((e) => stringField(e.data, "type"));
  events.forEach((e, i) => {
    that(e.event === undefined || e.event === types[i], `event ${i}: the SSE name ${e.event} differs from its type ${types[i]}`);
    that(
      field(e.data, "sequence_number") === i,
      `event ${i} (${types[i]}): sequence_number is ${JSON.stringify(field(e.data, "sequence_number"))}, expected ${i}`,
    );
  });
  that(types[0] === "response.created", `the first event is ${types[0]}, expected response.created`);
  const last = types.at(-1) ?? "";
  that(TERMINAL.has(last), `the last event is ${last}, expected response.completed, .incomplete or .failed`);
  that(types.filter((t) => TERMINAL.has(t ?? "")).length === 1, "more than one terminal event");
  const deltas = new Map<string, string>();
  for (const e of events) {
    if (stringField(e.data, "type") !== "response.output_text.delta") continue;
    const part = `${stringField(e.data, "item_id")}/${String(field(e.data, "content_index"))}`;
    deltas.set(part, (deltas.get(part) ?? "") + (stringField(e.data, "delta") ?? ""));
  }
  for (const e of events) {
    if (stringField(e.data, "type") !== "response.output_text.done") continue;
    const part = `${stringField(e.data, "item_id")}/${String(field(e.data, "content_index"))}`;
    that(deltas.get(part) === stringField(e.data, "text"), `the deltas of ${part} do not add up to its output_text.done text`);
  }
  if (last === "response.completed") {
    const response = field(events.at(-1)!.data, "response") as ResponseObject;
    that([...deltas.values()].join("\n\n") === outputTextOf(response), "the deltas do not add up to the completed response's text");
  }
}

export const messagingChecks: readonly Check[] = [
  {
    id: "messaging.respond",
    title: "POST .../responses answers a response object with the assistant's text",
    needs: ["running"],
    async run(ctx) {
      const ex = await ctx.call("createResponse", { params: { instance_id: ctx.facts.instanceId! }, body: { model: modelOf(ctx), input: INPUT } });
      const response = expectResponse(ex);
      that(outputTextOf(response).length > 0, "the response has no output_text");
    },
  },
  {
    id: "messaging.session",
    title: "POST .../session/{session_id}/responses answers in a named session, continuable by previous_response_id",
    needs: ["running"],
    async run(ctx) {
      const params = { instance_id: ctx.facts.instanceId!, session_id: `${ctx.run.prefix}-session` };
      const first = expectResponse(await ctx.call("createSessionResponse", { params, body: { model: modelOf(ctx), input: INPUT } }));
      expectResponse(
        await ctx.call("createSessionResponse", { params, body: { model: modelOf(ctx), input: "And once more.", previous_response_id: first.id } }),
      );
    },
  },
  {
    id: "messaging.invalid",
    title: "A message without model is 422 at body.model",
    needs: ["running"],
    async run({ call, facts }) {
      expectInvalid(await call("createResponse", { params: { instance_id: facts.instanceId! }, body: { input: INPUT } }), ["body", "model"]);
    },
  },
  {
    id: "messaging.previous-unknown",
    title: "An unknown previous_response_id is 400 previous_response_not_found, in the OpenAI error form",
    needs: ["running"],
    async run(ctx) {
      const ex = await ctx.call("createResponse", {
        params: { instance_id: ctx.facts.instanceId! },
        body: { model: modelOf(ctx), input: INPUT, previous_response_id: `resp_${"0".repeat(32)}` },
      });
      expectStatus(ex, 400);
      const error = field(jsonObject(ex), "error");
      that(field(error, "code") === "previous_response_not_found", `error.code is ${JSON.stringify(field(error, "code"))}`);
      that(field(error, "param") === "previous_response_id", `error.param is ${JSON.stringify(field(error, "param"))}`);
    },
  },
  {
    id: "messaging.stream",
    title: "stream: true answers server-sent events in order, ending in one terminal event whose text the deltas add up to",
    needs: ["running"],
    async run(ctx) {
      checkStream(
        await ctx.call("createResponse", { params: { instance_id: ctx.facts.instanceId! }, body: { model: modelOf(ctx), input: INPUT, stream: true } }),
      );
    },
  },
];
