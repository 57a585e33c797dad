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
import { stripComments, substituteEnv } from "./env.js";
import { readJsonc } from "../../shared/jsonc.js";
import { channelLabeller, formatPath, isRecord, issueMessage, issuesToProblems, relabelProblem, type PathPart, type Relabel } from "./problems.js";
import { channelSchema, daemonConfigSchema, type DaemonConfig } from "./schema.js";

export { stripComments, substituteEnv } from "./env.js";
export { formatPath, suggestKey } from "./problems.js";

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
        problems.push(
          `${formatPath(toFilePath(["channels", i, "id"]))}: duplicate account id "${c.id}" (also channels[${other}], disabled); give each channel its own id`,
        );
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

/** Routes whose `match.accountId`, and schedules whose `channel`, name no channel (enabled or disabled). */
function unknownAccountIds(raw: unknown, disabledIds: Map<string, number>): string[] {
  if (!isRecord(raw)) return [];
  const ids = new Set(disabledIds.keys());
  if (Array.isArray(raw.channels)) {
    for (const ch of raw.channels) {
      if (!isRecord(ch)) continue;
      const id = typeof ch.id === "string" ? ch.id.trim() : typeof ch.type === "string" ? ch.type : undefined;
      if (id) ids.add(id);
    }
  }
  const schedules = Array.isArray(raw.schedules)
    ? raw.schedules.flatMap((s, i) => {
        const channel = isRecord(s) ? s.channel : undefined;
        return typeof channel === "string" && channel.trim() && !ids.has(channel.trim())
          ? [`${formatPath(["schedules", i, "channel"])}: no channel has id "${channel.trim()}"`]
          : [];
      })
    : [];
  if (ids.size === 0 || !Array.isArray(raw.routes)) return schedules;
  return [
    ...raw.routes.flatMap((r, i) => {
      const acc = isRecord(r) && isRecord(r.match) ? r.match.accountId : undefined;
      return typeof acc === "string" && !ids.has(acc.trim()) ? [`${formatPath(["routes", i, "match", "accountId"])}: no channel has id "${acc.trim()}"`] : [];
    }),
    ...schedules,
  ];
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
  const { value, problems } = readJsonc(text);
  if (problems.length > 0)
    throw new ConfigError(
      problems.map((p) => `(file): ${p}`),
      path,
    );
  return parseConfig(value, env, path);
}
