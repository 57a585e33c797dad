/**
 * Reading the config: JSON in, `${ENV_VAR}` references substituted, `"//"`
 * comment keys dropped, zod defaults filled. Every problem is reported at
 * once as `<key.path>: <problem>`, and no message ever carries a value from
 * the file or the environment (they may be secrets).
 */
import { readFile } from "node:fs/promises";
import type { z } from "zod";
import { daemonConfigSchema, type DaemonConfig } from "./schema.js";

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

const issuesToProblems = (issues: readonly z.core.$ZodIssue[]): { path: string; text: string }[] =>
  issues.flatMap((iss) => {
    if (iss.code === "unrecognized_keys") {
      return iss.keys.map((k) => ({ path: formatPath([...iss.path, k]), text: "unknown key" }));
    }
    return [{ path: formatPath(iss.path), text: iss.message }];
  });

/**
 * Validates an already-read config value (e.g. `JSON.parse` output, or an
 * object built in code). Throws `ConfigError` listing every problem.
 */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env, source?: string): DaemonConfig {
  const envProblems: string[] = [];
  const substituted = substituteEnv(stripComments(raw), env, envProblems);
  const result = daemonConfigSchema.safeParse(substituted, { error: issueMessage });
  if (envProblems.length === 0 && result.success) return result.data;

  // An unset variable usually also fails validation at the same key; say it once.
  const envPaths = new Set(envProblems.map((p) => p.slice(0, p.indexOf(": "))));
  const schemaProblems = result.success
    ? []
    : issuesToProblems(result.error.issues)
        .filter((p) => !envPaths.has(p.path))
        .map((p) => `${p.path}: ${p.text}`);
  throw new ConfigError([...envProblems, ...schemaProblems], source);
}

/** Reads, substitutes and validates the JSON config file at `path`. */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<DaemonConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "read error";
    throw new ConfigError([`(file): cannot read it (${code})`], path);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // V8 quotes a piece of the file in its message, which may hold a secret: report only where.
    throw new ConfigError([`(file): not valid JSON${jsonErrorLocation(text, err)}`], path);
  }
  return parseConfig(raw, env, path);
}

function jsonErrorLocation(text: string, err: unknown): string {
  const message = err instanceof Error ? err.message : "";
  const lc = /line (\d+) column (\d+)/.exec(message);
  if (lc) return ` at line ${lc[1]} column ${lc[2]}`;
  const pos = /position (\d+)/.exec(message);
  if (pos?.[1] !== undefined) {
    const before = text.slice(0, Number(pos[1]));
    const line = before.split("\n").length;
    const column = before.length - before.lastIndexOf("\n");
    return ` at line ${line} column ${column}`;
  }
  if (/end of JSON input/i.test(message)) return " (it ends too early)";
  return "";
}
