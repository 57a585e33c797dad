/**
 * What the loader does to the value before validating it: drops `"//..."`
 * comment keys, and replaces `${NAME}` with environment variables.
 */
import { formatPath, type PathPart } from "./problems.js";

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
export function substituteEnv(value: unknown, env: NodeJS.ProcessEnv, problems: string[], path: PathPart[] = []): unknown {
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
