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
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    total_tokens: z.number().int(),
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
