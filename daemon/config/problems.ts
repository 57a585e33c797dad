/**
 * Config problems as people read them: `<key.path>: <problem>`, with
 * channels named by id (`channels.telegram.token`), zod's generic issues in
 * plain words, and a "did you mean" for unknown keys (the known keys come
 * from the generated JSON Schema, so they cannot drift from the zod schema).
 */
import { distance } from "fastest-levenshtein";
import type { z } from "zod";
import { configJsonSchema } from "./json-schema.js";

export type PathPart = string | number | symbol;

/** `channels.telegram.access.groups["-100123"].users`, the way a person would write it. */
export function formatPath(path: readonly PathPart[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (typeof part === "symbol") out += `[${part.toString()}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(part)) out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out || "(root)";
}

const TYPE_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  array: "a list",
  object: "an object",
  record: "an object",
};

/** Per-parse messages for zod's generic issues; schema-level messages take precedence. */
export const issueMessage = (iss: z.core.$ZodRawIssue): string | undefined => {
  if (iss.code === "invalid_type") {
    if (iss.input === undefined) return "required";
    return `must be ${TYPE_WORDS[iss.expected] ?? iss.expected}`;
  }
  if (iss.code === "invalid_value") {
    return `must be one of ${iss.values.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  if (iss.code === "invalid_union" && iss.note === "No matching discriminator") {
    const options = (iss as { options?: unknown[] }).options ?? [];
    return `must be one of ${options.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  return undefined;
};

/** Maps a path in the value to the path shown to people. */
export type Relabel = (path: readonly PathPart[]) => PathPart[];

export const issuesToProblems = (
  issues: readonly z.core.$ZodIssue[],
  raw: unknown,
  relabel: Relabel,
  base: readonly PathPart[] = [],
): { path: string; text: string }[] =>
  issues.flatMap((iss) => {
    const full = [...base, ...iss.path];
    if (iss.code === "unrecognized_keys") {
      const known = knownKeysAt(raw, full);
      return iss.keys.map((k) => {
        const guess = suggestKey(k, known);
        return { path: formatPath(relabel([...full, k])), text: guess ? `unknown key; did you mean "${guess}"?` : "unknown key" };
      });
    }
    return [{ path: formatPath(relabel(full)), text: iss.message }];
  });

/**
 * The known key a typo most likely meant: close as a whole (a slip), or
 * close to its start (`debounce` for `debounceMs`). None when nothing is.
 */
export function suggestKey(typed: string, known: readonly string[]): string | undefined {
  let best: { key: string; score: number } | undefined;
  for (const key of known) {
    const whole = distance(typed.toLowerCase(), key.toLowerCase());
    const prefix = typed.length >= 4 ? distance(typed.toLowerCase(), key.slice(0, typed.length).toLowerCase()) : Infinity;
    const score = Math.min(whole <= Math.max(2, Math.floor(typed.length / 3)) ? whole : Infinity, prefix <= 2 ? prefix + 0.5 : Infinity);
    if (score < (best?.score ?? Infinity)) best = { key, score };
  }
  return best?.key;
}

type JsonSchemaNode = {
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode;
  additionalProperties?: JsonSchemaNode | boolean;
  anyOf?: JsonSchemaNode[];
  oneOf?: JsonSchemaNode[];
  allOf?: JsonSchemaNode[];
  const?: unknown;
};
let cachedSchema: JsonSchemaNode | undefined;

/** The keys the schema knows at `path` of `raw` (union branches picked by the value's `type`). */
function knownKeysAt(raw: unknown, path: readonly PathPart[]): string[] {
  cachedSchema ??= configJsonSchema() as JsonSchemaNode;
  let node: JsonSchemaNode | undefined = cachedSchema;
  let value = raw;
  const pick = (n: JsonSchemaNode | undefined, v: unknown): JsonSchemaNode | undefined => {
    const options = n?.anyOf ?? n?.oneOf;
    if (!options) return n;
    const type = v && typeof v === "object" && "type" in v ? (v as { type: unknown }).type : undefined;
    return options.find((o) => o.properties?.type?.const === type) ?? options.find((o) => o.properties) ?? n;
  };
  for (const part of path) {
    node = pick(node, value);
    if (!node) return [];
    if (typeof part === "number") node = node.items;
    else if (typeof part === "string")
      node = node.properties?.[part] ?? (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined);
    else return [];
    value = value && typeof value === "object" ? (value as Record<string, unknown>)[part as string] : undefined;
  }
  node = pick(node, value);
  return Object.keys(node?.properties ?? {}).filter((k) => k !== "$schema");
}

export const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * `channels[1]` becomes `channels.telegram` (or `channels["my-bot"]`): the
 * channel's id, or its type when it has none (the default id). A label
 * shared by two channels stays an index.
 */
export function channelLabeller(raw: unknown): Relabel {
  const labels: (string | undefined)[] = [];
  if (isRecord(raw) && Array.isArray(raw.channels)) {
    const count = new Map<string, number>();
    const own = raw.channels.map((ch) => {
      if (!isRecord(ch)) return undefined;
      const id = typeof ch.id === "string" && ch.id.trim() ? ch.id.trim() : typeof ch.type === "string" && ch.type ? ch.type : undefined;
      if (id !== undefined) count.set(id, (count.get(id) ?? 0) + 1);
      return id;
    });
    for (const id of own) labels.push(id !== undefined && count.get(id) === 1 ? id : undefined);
  }
  return (path) => {
    if (path[0] === "channels" && typeof path[1] === "number") {
      const label = labels[path[1]];
      if (label !== undefined) return ["channels", label, ...path.slice(2)];
    }
    return [...path];
  };
}

/** Env problems are written with index paths (`channels[0].token: ...`): rename their channel. */
export function relabelProblem(problem: string, relabel: Relabel): string {
  const m = /^channels\[(\d+)\]/.exec(problem);
  if (!m) return problem;
  const renamed = formatPath(relabel(["channels", Number(m[1])]));
  return renamed + problem.slice(m[0].length);
}
