import { z } from "zod";

const TEXT_PARTS = new Set(["input_text", "output_text", "text"]);
const ContentPart = z
  .looseObject({ type: z.string(), text: z.string().optional() })
  .refine((part) => !TEXT_PARTS.has(part.type) || typeof part.text === "string", { message: "A text part needs `text`", path: ["text"] });
/** A message (`type` absent or `message`): `role` and `content` required, as the gateway requires them. */
const MessageItem = z.looseObject({
  type: z.literal("message").optional(),
  role: z.string(),
  content: z.union([z.string(), z.array(ContentPart)]),
});
/** Any other item type (tool outputs...): passed through, the gateway ignores it. */
const OtherItem = z.looseObject({ type: z.string().refine((type) => type !== "message", "A message item needs role and content") });
/** Input items: exactly what the gateway accepts (OpenAI Responses input items). */
export const InputItem = z.union([MessageItem, OtherItem]);

/** Open: any other gateway-supported field passes through unchanged. */
export const ResponseRequest = z.looseObject({
  model: z.string().min(1).max(256),
  input: z.union([z.string(), z.array(InputItem).min(1)]),
  previous_response_id: z.string().min(1).max(256).optional(),
  instructions: z.string().optional(),
  stream: z.boolean().optional(),
});
export type ResponseRequest = z.infer<typeof ResponseRequest>;

/**
 * An error the instance's gateway answered on a message call, passed through
 * unchanged: the OpenAI error shape (e.g. `previous_response_not_found`, a
 * scripted 429 with `retry-after`, `context_length_exceeded`).
 */
export const GatewayErrorBody = z.object({
  error: z.object({
    type: z.string(),
    code: z.string().nullable(),
    param: z.string().nullable(),
    message: z.string(),
  }),
});
export type GatewayErrorBody = z.infer<typeof GatewayErrorBody>;

export const OutputText = z.looseObject({ type: z.literal("output_text"), text: z.string() });
export const OutputItem = z.looseObject({
  type: z.string(),
  role: z.string().optional(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })).optional(),
});

export const ResponseObject = z.looseObject({
  id: z.string(),
  object: z.literal("response"),
  status: z.string(),
  output: z.array(OutputItem),
  model: z.string(),
  usage: z.looseObject({
    input_tokens: z.number().int().min(0),
    output_tokens: z.number().int().min(0),
    total_tokens: z.number().int().min(0),
  }),
});
export type ResponseObject = z.infer<typeof ResponseObject>;

/** The assistant's text: every `output_text` block of every assistant message, in order. */
export function outputTextOf(response: Pick<ResponseObject, "output">): string {
  const parts: string[] = [];
  for (const item of response.output) {
    if (item.type !== "message") continue;
    for (const block of item.content ?? []) {
      if (block.type === "output_text" && typeof block.text === "string") parts.push(block.text);
    }
  }
  return parts.join("\n\n");
}

/**
 * Server-sent events of a streamed response (`stream: true`), in the shapes of
 * the OpenAI Responses API. Open objects: fields beyond these pass through.
 */
const Sequenced = { sequence_number: z.number().int() };
const TextRef = { item_id: z.string(), output_index: z.number().int(), content_index: z.number().int() };
/** A response as it is while in progress: no usage yet, maybe no output. */
export const ResponseInProgress = ResponseObject.extend({ usage: ResponseObject.shape.usage.nullable().optional() });

export const ResponseCreatedEvent = z.looseObject({ type: z.literal("response.created"), ...Sequenced, response: ResponseInProgress });
export const ResponseInProgressEvent = z.looseObject({ type: z.literal("response.in_progress"), ...Sequenced, response: ResponseInProgress });
export const OutputItemAddedEvent = z.looseObject({
  type: z.literal("response.output_item.added"),
  ...Sequenced,
  output_index: z.number().int(),
  item: OutputItem,
});
export const OutputItemDoneEvent = z.looseObject({
  type: z.literal("response.output_item.done"),
  ...Sequenced,
  output_index: z.number().int(),
  item: OutputItem,
});
export const ContentPartAddedEvent = z.looseObject({
  type: z.literal("response.content_part.added"),
  ...Sequenced,
  ...TextRef,
  part: z.looseObject({ type: z.string() }),
});
export const ContentPartDoneEvent = z.looseObject({
  type: z.literal("response.content_part.done"),
  ...Sequenced,
  ...TextRef,
  part: z.looseObject({ type: z.string() }),
});
/** A piece of the assistant's text: the deltas, in order, add up to the final text. */
export const OutputTextDeltaEvent = z.looseObject({ type: z.literal("response.output_text.delta"), ...Sequenced, ...TextRef, delta: z.string() });
export const OutputTextDoneEvent = z.looseObject({ type: z.literal("response.output_text.done"), ...Sequenced, ...TextRef, text: z.string() });
/** Terminal: the whole response, as the non-streamed call would answer it. */
export const ResponseCompletedEvent = z.looseObject({ type: z.literal("response.completed"), ...Sequenced, response: ResponseObject });
/** Terminal failures. */
export const ResponseFailedEvent = z.looseObject({ type: z.literal("response.failed"), ...Sequenced, response: ResponseInProgress });
export const ResponseIncompleteEvent = z.looseObject({ type: z.literal("response.incomplete"), ...Sequenced, response: ResponseInProgress });
export const StreamErrorEvent = z.looseObject({
  type: z.literal("error"),
  sequence_number: z.number().int().optional(),
  code: z.string().nullable().optional(),
  message: z.string(),
  param: z.string().nullable().optional(),
});

export const KnownStreamEvent = z.discriminatedUnion("type", [
  ResponseCreatedEvent,
  ResponseInProgressEvent,
  OutputItemAddedEvent,
  OutputItemDoneEvent,
  ContentPartAddedEvent,
  ContentPartDoneEvent,
  OutputTextDeltaEvent,
  OutputTextDoneEvent,
  ResponseCompletedEvent,
  ResponseFailedEvent,
  ResponseIncompleteEvent,
  StreamErrorEvent,
]);
export type KnownStreamEvent = z.infer<typeof KnownStreamEvent>;
/** The `type`s the client knows; any other event reaches callers as `unknown_event`. */
export const KNOWN_STREAM_EVENT_TYPES: ReadonlySet<string> = new Set(KnownStreamEvent.options.map((o) => o.shape.type.value));
