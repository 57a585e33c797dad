/**
 * What the fake model answers, unscripted, to a request that asks for more
 * than text (docs/api-contract.md, "The fake model"): deterministic, so a
 * test can rely on it without writing a script.
 *
 * - `tools` and an input that names one of them (as a word): a call to the
 *   first tool named, in the order of `tools`, with arguments made from its
 *   parameters' schema.
 * - only `function_call_output` items (no user text): one line per output,
 *   `Tool <call_id> returned: <output>`.
 * - `text.format` `json_schema`: an object that satisfies the schema, or 400
 *   `unsupported_schema` naming what is outside the supported subset;
 *   `json_object`: `{"text": <the echo>}`.
 * Otherwise (null) the echo and its directives answer.
 */
import { invalid, type ResponsesRequest } from "./request.js";
import type { Answer } from "./reply.js";
import type { AnswerItem } from "../store/schema.js";
import type { NewId } from "./script/answer.js";
import { sampleOf, unsupportedIn } from "./script/json-schema.js";

const namesWord = (text: string, word: string): boolean => {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^\\w])${escaped}($|[^\\w])`).test(text);
};

const single = (item: AnswerItem): Answer => ({ ok: true, reply: { items: [item], status: "completed", plain: false } });

/** The default answer to a request with tools, tool outputs or a JSON format; null: the echo answers. */
export function defaultAnswer(request: ResponsesRequest, echo: () => string, newId: NewId): Answer | null {
  const tool = request.tools.find((t) => namesWord(request.userText, t.name));
  if (tool) {
    const args = tool.parameters !== null && unsupportedIn(tool.parameters) === null ? sampleOf(tool.parameters) : {};
    return single({ type: "function_call", id: newId("fc"), call_id: newId("call"), name: tool.name, arguments: JSON.stringify(args) });
  }
  if (request.toolOutputs.length && request.userText === "") {
    const text = request.toolOutputs.map((o) => `Tool ${o.callId} returned: ${o.output}`).join("\n");
    return single({ type: "message", id: newId("msg"), text });
  }
  const format = request.format;
  if (format?.type === "json_schema") {
    const problem = unsupportedIn(format.schema);
    if (problem) {
      return {
        ok: false,
        error: invalid(
          "unsupported_schema",
          "text.format.schema",
          `The fake model cannot answer schema '${format.name}': ${problem.replace(/^\$/, "schema")}.`,
        ),
      };
    }
    return single({ type: "message", id: newId("msg"), text: JSON.stringify(sampleOf(format.schema)) });
  }
  if (format?.type === "json_object") return single({ type: "message", id: newId("msg"), text: JSON.stringify({ text: echo() }) });
  return null;
}
