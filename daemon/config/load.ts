/**
 * Reading the config: JSON with comments and trailing commas (JSONC, as
 * editors write it) in, a top-level `$schema` key and `"//"` comment keys
 * dropped, `${ENV_VAR}` references substituted, zod defaults filled. Every
 * problem is reported at once as `<key.path>: <problem>`; channels are named
 * by their id (`channels.telegram.token`), unknown keys get a "did you
 * mean", and no message ever carries a value from the file or the
 * environment (they may be secrets).
 *
 * A disabled channel (`"enabled": false`) is checked for shape and typos,
 * but its `${VAR}`s need not be set, and it is left out of the result: the
 * daemon never starts it.
 */
import { readFile } from "node:fs/promises";
import { distance } from "fastest-levenshtein";
import { parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser";
import type { z } from "zod";
import { configJsonSchema } from "./json-schema.js";
import { channelSchema, daemonConfigSchema, type DaemonConfig } from "./schema.js";

export type { DaemonConfig } from "./schema.js";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  /** Each `<key.path>: <problem>`. */
  readonly problems: readonly string[];

  constructor(problems: string[], source?: string) {
    const head = source ? `Invalid daemon config ${source}` : "Invalid daemon config";
    super(`${head}:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.problems = problems;
  }
}

type PathPart = string | number | symbol;

/** `channels[1].access.groups["-100123"].users`, the way a person would write it. */
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

const isComment = (key: string) => key.startsWith("//");

/** Drops `"//..."` keys at every depth, so a JSON file can carry comments. */
export function stripComments(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripComments);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!isComment(k)) out[k] = stripComments(v);
    return out;
  }
  return value;
}

const ENV_REF = /\$(\$?)\{([^}]*)\}/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Replaces `${NAME}` in every string. `$${NAME}` stays as the literal
 * `${NAME}`. Unset variables become problems; an empty one is kept as "".
 */
export function substituteEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  problems: string[],
  path: PathPart[] = [],
): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (whole, escaped: string, name: string) => {
      if (escaped) return whole.slice(1);
      if (!ENV_NAME.test(name)) {
        problems.push(`${formatPath(path)}: "\${${name}}" is not a valid environment variable reference`);
        return whole;
      }
      const v = env[name];
      if (v === undefined) {
        problems.push(`${formatPath(path)}: environment variable ${name} is not set`);
        return "";
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, problems, [...path, i]));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, problems, [...path, k]);
    return out;
  }
  return value;
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
const issueMessage = (iss: z.core.$ZodRawIssue): string | undefined => {
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

/** Names `channels[i]` by the channel's id, when that id is unique. */
type Relabel = (path: readonly PathPart[]) => PathPart[];

const issuesToProblems = (
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

type JsonSchemaNode = { properties?: Record<string, JsonSchemaNode>; items?: JsonSchemaNode; additionalProperties?: JsonSchemaNode | boolean; anyOf?: JsonSchemaNode[]; oneOf?: JsonSchemaNode[]; allOf?: JsonSchemaNode[]; const?: unknown };
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
    else if (typeof part === "string") node = node.properties?.[part] ?? (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined);
    else return [];
    value = value && typeof value === "object" ? (value as Record<string, unknown>)[part as string] : undefined;
  }
  node = pick(node, value);
  return Object.keys(node?.properties ?? {}).filter((k) => k !== "$schema");
}

/**
 * Validates an already-read config value (e.g. `JSON.parse` output, or an
 * object built in code). Throws `ConfigError` listing every problem.
 */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env, source?: string): DaemonConfig {
  let cleaned = stripComments(raw);
  if (isRecord(cleaned) && "$schema" in cleaned) {
    const { $schema: _editorsOnly, ...rest } = cleaned;
    cleaned = rest;
  }
  const relabel = channelLabeller(cleaned);

  // Disabled channels: checked on their own, without their variables, then left out.
  const problems: string[] = [];
  const disabledIds = new Map<string, number>();
  let forSchema = cleaned;
  const indexMap: number[] = [];
  if (isRecord(cleaned) && Array.isArray(cleaned.channels)) {
    const kept: unknown[] = [];
    cleaned.channels.forEach((ch, i) => {
      if (!(isRecord(ch) && ch.enabled === false)) {
        indexMap.push(i);
        kept.push(ch);
        return;
      }
      const unset: string[] = [];
      const base: PathPart[] = ["channels", i];
      const substituted = substituteEnv(ch, env, unset, base);
      const unsetPaths = new Set(unset.map((p) => relabelProblem(p, relabel)).map((p) => p.slice(0, p.indexOf(": "))));
      const result = channelSchema.safeParse(substituted, { error: issueMessage });
      if (!result.success) {
        for (const p of issuesToProblems(result.error.issues, cleaned, relabel, base)) {
          if (!unsetPaths.has(p.path)) problems.push(`${p.path}: ${p.text}`);
        }
      }
      const id = typeof ch.id === "string" ? ch.id : typeof ch.type === "string" ? ch.type : undefined;
      if (id !== undefined) disabledIds.set(id, i);
    });
    forSchema = { ...cleaned, channels: kept };
  }
  // Paths from the schema count kept channels; name them as the file does.
  const toFilePath: Relabel = (path) =>
    relabel(path[0] === "channels" && typeof path[1] === "number" ? ["channels", indexMap[path[1]] ?? path[1], ...path.slice(2)] : path);

  const envProblems: string[] = [];
  const substituted = substituteEnv(forSchema, env, envProblems);
  const result = daemonConfigSchema.safeParse(substituted, { error: issueMessage });

  // Cross-references that must see disabled channels too.
  if (result.success) {
    result.data.channels.forEach((c, i) => {
      const other = disabledIds.get(c.id);
      if (other !== undefined) {
        problems.push(`${formatPath(toFilePath(["channels", i, "id"]))}: duplicate account id "${c.id}" (also channels[${other}], disabled); give each channel its own id`);
      }
    });
  }
  problems.push(...unknownAccountIds(forSchema, disabledIds));
  if (problems.length === 0 && envProblems.length === 0 && result.success) return result.data;

  const relabelledEnv = envProblems.map((p) => relabelProblem(p, toFilePath));
  // An unset variable usually also fails validation at the same key; say it once.
  const envPaths = new Set(relabelledEnv.map((p) => p.slice(0, p.indexOf(": "))));
  const schemaProblems = result.success
    ? []
    : issuesToProblems(result.error.issues, forSchema, toFilePath)
        .filter((p) => !envPaths.has(p.path))
        .map((p) => `${p.path}: ${p.text}`);
  throw new ConfigError([...relabelledEnv, ...schemaProblems, ...problems], source);
}

/** Routes whose `match.accountId` names no channel (enabled or disabled). */
function unknownAccountIds(raw: unknown, disabledIds: Map<string, number>): string[] {
  if (!isRecord(raw) || !Array.isArray(raw.routes)) return [];
  const ids = new Set(disabledIds.keys());
  if (Array.isArray(raw.channels)) {
    for (const ch of raw.channels) {
      if (!isRecord(ch)) continue;
      const id = typeof ch.id === "string" ? ch.id.trim() : typeof ch.type === "string" ? ch.type : undefined;
      if (id) ids.add(id);
    }
  }
  if (ids.size === 0) return [];
  return raw.routes.flatMap((r, i) => {
    const acc = isRecord(r) && isRecord(r.match) ? r.match.accountId : undefined;
    return typeof acc === "string" && !ids.has(acc.trim()) ? [`${formatPath(["routes", i, "match", "accountId"])}: no channel has id "${acc.trim()}"`] : [];
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * `channels[1]` becomes `channels.telegram` (or `channels["my-bot"]`): the
 * channel's id, or its type when it has none (the default id). A label
 * shared by two channels stays an index.
 */
function channelLabeller(raw: unknown): Relabel {
  const labels: (string | undefined)[] = [];
  if (isRecord(raw) && Array.isArray(raw.channels)) {
    const count = new Map<string, number>();
    const own = raw.channels.map((ch) => {
      if (!isRecord(ch)) return undefined;
      const id = typeof ch.id === "string" && ch.id.trim() ? ch.id.trim() : typeof ch.type === "string" && ch.type ? ch.type : undefined;
      if (id !== undefined) count.set(id, (count.get(id) ?? 0) + 1);
      return id;
    });
    own.forEach((id) => labels.push(id !== undefined && count.get(id) === 1 ? id : undefined));
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
function relabelProblem(problem: string, relabel: Relabel): string {
  const m = /^channels\[(\d+)\]/.exec(problem);
  if (!m) return problem;
  const renamed = formatPath(relabel(["channels", Number(m[1])]));
  return renamed + problem.slice(m[0].length);
}

/** Reads, substitutes and validates the JSON (with comments) config file at `path`. */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<DaemonConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "read error";
    throw new ConfigError([`(file): cannot read it (${code})`], path);
  }
  const errors: ParseError[] = [];
  const raw: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  if (errors.length > 0) {
    // Where and what, never the text there: it may hold a secret.
    throw new ConfigError(
      errors.slice(0, 5).map((e) => `(file): not valid JSON at ${lineColumn(text, e.offset)}: ${parseErrorWords(e)}`),
      path,
    );
  }
  return parseConfig(raw, env, path);
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = before.length - before.lastIndexOf("\n");
  return `line ${line} column ${column}`;
}

const PARSE_WORDS: Record<string, string> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "not a number",
  PropertyNameExpected: "a key in double quotes expected",
  ValueExpected: "a value expected",
  ColonExpected: "a colon expected",
  CommaExpected: "a comma expected",
  CloseBraceExpected: "a closing } expected",
  CloseBracketExpected: "a closing ] expected",
  EndOfFileExpected: "the file should end here",
  InvalidCommentToken: "a comment not closed",
  UnexpectedEndOfComment: "a comment not closed",
  UnexpectedEndOfString: "a string not closed",
  UnexpectedEndOfNumber: "a number cut short",
  InvalidUnicode: "a bad \\u escape",
  InvalidEscapeCharacter: "a bad escape",
  InvalidCharacter: "a character not allowed in a string",
};
const parseErrorWords = (e: ParseError): string => {
  const code = printParseErrorCode(e.error);
  return PARSE_WORDS[code] ?? code;
};
