/**
 * The config's JSON Schema, generated from the zod schema (one source of
 * truth): what `agent-bridge config schema` prints and `config.schema.json`
 * holds, so editors complete and check the file. Adjusted for what the
 * loader accepts beyond the zod shape: `"//..."` comment keys anywhere, a
 * `$schema` key at the top, and `${VAR}` references in place of any
 * string with a pattern or format.
 */
import { z } from "zod";
import { daemonConfigSchema } from "./schema.js";

type Json = { [key: string]: unknown };

const ENV_REF = { type: "string", pattern: "\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}", description: "an environment variable reference, ${NAME}" };

function adjust(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(adjust);
  if (!node || typeof node !== "object") return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === "const" || k === "default" || k === "enum" ? v : adjust(v);
  if (out.type === "object" && out.additionalProperties === false) {
    out.patternProperties = { "^//": { description: "a comment: ignored" } };
  }
  const constrained = out.pattern !== undefined || out.format !== undefined || Array.isArray(out.allOf);
  if (out.type === "string" && constrained) {
    // The description and default describe the key, whichever form its value takes.
    const { description, default: fallback, ...rest } = out;
    return { ...(description !== undefined ? { description } : {}), ...(fallback !== undefined ? { default: fallback } : {}), anyOf: [rest, ENV_REF] };
  }
  return out;
}

/** The JSON Schema object (draft 2020-12). */
export function configJsonSchema(): Json {
  const generated = z.toJSONSchema(daemonConfigSchema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Json;
  const schema = adjust(generated) as Json;
  const properties = (schema.properties ?? {}) as Json;
  return {
    $schema: generated.$schema,
    title: "agent-bridge daemon config",
    description: "The config file of `agent-bridge run` / `agent-bridge check`. JSON with comments; ${NAME} in a string is read from the environment.",
    ...schema,
    properties: { $schema: { type: "string", description: "where editors find this schema" }, ...properties },
  };
}

/** As written to config.schema.json: two-space JSON and a final newline. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}
