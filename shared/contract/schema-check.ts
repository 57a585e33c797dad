/**
 * Every place a JSON value departs from a JSON Schema (2020-12, as zod writes
 * it for the OpenAPI document): not the first, all of them, each named by
 * JSON path and kind. Unlike a validator's yes/no, a drift report needs "which
 * field, what was expected, what came": so `anyOf`/`oneOf` report the branch
 * the value came closest to, and a missing field and an unknown one are told
 * apart (together they are what a renamed field looks like).
 */
import type { Drift } from "./drift.js";

export type SchemaDrift = Pick<Drift, "jsonPath" | "expected" | "actual" | "kind">;
type Schema = Record<string, unknown>;

export interface SchemaCheckOptions {
  /** Resolves a `$ref` (e.g. `#/components/schemas/Instance`); undefined when it names nothing. */
  resolve: (ref: string) => Schema | undefined;
  /** The value's place, `$` by default. */
  at?: string;
}

const MAX_DEPTH = 64;
const isRecord = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON path one step down: `$.a`, `$[0]`, `$["odd key"]`. */
export const pathAt = (base: string, key: string | number): string =>
  typeof key === "number" ? `${base}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;

/** A JSON type name; whole numbers are `integer` (and also fit `number`). */
export const jsonTypeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "number" && Number.isInteger(value) ? "integer" : typeof value;

const fits = (value: unknown, type: string): boolean => {
  const actual = jsonTypeOf(value);
  return actual === type || (type === "number" && actual === "integer");
};

/** A short rendering of a value for a report: scalars as JSON (long strings cut), containers by type. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "absent";
  if (isRecord(value) || Array.isArray(value)) return jsonTypeOf(value);
  const text = JSON.stringify(value);
  return text.length > 64 ? `${text.slice(0, 60)}..."` : text;
}

const refName = (ref: string): string => ref.slice(ref.lastIndexOf("/") + 1);
const typesOf = (node: Schema): string[] => (node.type === undefined ? [] : Array.isArray(node.type) ? node.type.map(String) : [String(node.type)]);

/** What a schema asks for, briefly: `Instance`, `string`, `one of: a, b`, `integer or null`. */
export function describeSchema(node: unknown, resolve: SchemaCheckOptions["resolve"], depth = 0): string {
  if (!isRecord(node) || depth > 4) return "any value";
  if (typeof node.$ref === "string") return refName(node.$ref);
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (Array.isArray(node.enum)) return `one of: ${node.enum.map((e) => (typeof e === "string" ? e : JSON.stringify(e))).join(", ")}`;
  const branches = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
  if (branches) return branches.map((b) => describeSchema(b, resolve, depth + 1)).join(" or ");
  const types = typesOf(node);
  if (types.length === 0) return "any value";
  if (types.length === 1 && types[0] === "string" && typeof node.format === "string") return `string (${node.format})`;
  if (types.length === 1 && types[0] === "array" && node.items !== undefined) return `array of ${describeSchema(node.items, resolve, depth + 1)}`;
  return types.join(" or ");
}

/** How badly a branch missed: a wrong type at its root counts as missing it entirely. */
const score = (drifts: SchemaDrift[], at: string): number =>
  drifts.reduce((n, d) => n + (d.jsonPath === at && (d.kind === "type" || d.kind === "enum") ? 1000 : 1), 0);

const patterns = new Map<string, RegExp | null>();
function compiled(pattern: string): RegExp | null {
  let re = patterns.get(pattern);
  if (re === undefined) {
    try {
      re = new RegExp(pattern, "u");
    } catch {
      try {
        re = new RegExp(pattern);
      } catch {
        re = null; // a pattern JavaScript cannot read constrains nothing here
      }
    }
    patterns.set(pattern, re);
  }
  return re;
}

/** Formats zod writes without a pattern that a string can visibly miss. */
const FORMATS: Record<string, (s: string) => boolean> = {
  uri: (s) => URL.canParse(s),
  email: (s) => /^[^\s@]+@[^\s@]+$/.test(s),
};

/** Every departure of `value` from `schema`, in document order; empty when it fits. */
export function checkAgainstSchema(schema: unknown, value: unknown, options: SchemaCheckOptions): SchemaDrift[] {
  const { resolve } = options;
  const out: SchemaDrift[] = [];

  const walk = (node: unknown, v: unknown, at: string, depth: number, into: SchemaDrift[]): void => {
    if (!isRecord(node) || depth > MAX_DEPTH) return;
    if (typeof node.$ref === "string") {
      const target = resolve(node.$ref);
      if (target) walk(target, v, at, depth + 1, into);
      return;
    }
    if (Array.isArray(node.allOf)) for (const sub of node.allOf) walk(sub, v, at, depth + 1, into);
    const branches = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
    if (branches?.length) {
      let best: SchemaDrift[] | undefined;
      for (const branch of branches) {
        const found: SchemaDrift[] = [];
        walk(branch, v, at, depth + 1, found);
        if (found.length === 0) {
          best = found;
          break;
        }
        if (!best || score(found, at) < score(best, at)) best = found;
      }
      if (best?.length) {
        // A value that fits no branch even by type: one entry naming them all reads better than a guess.
        if (score(best, at) >= 1000) into.push({ jsonPath: at, expected: describeSchema(node, resolve), actual: describeValue(v), kind: "type" });
        else into.push(...best);
        return;
      }
    }
    if (node.const !== undefined && JSON.stringify(node.const) !== JSON.stringify(v)) {
      into.push({ jsonPath: at, expected: JSON.stringify(node.const), actual: describeValue(v), kind: "enum" });
      return;
    }
    if (Array.isArray(node.enum) && !node.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
      into.push({ jsonPath: at, expected: describeSchema({ enum: node.enum }, resolve), actual: describeValue(v), kind: "enum" });
      return;
    }
    const types = typesOf(node);
    if (types.length && !types.some((t) => fits(v, t))) {
      into.push({ jsonPath: at, expected: describeSchema(node, resolve), actual: jsonTypeOf(v), kind: "type" });
      return;
    }
    if (isRecord(v)) checkObject(node, v, at, depth, into);
    else if (Array.isArray(v)) checkArray(node, v, at, depth, into);
    else if (typeof v === "string") checkString(node, v, at, into);
    else if (typeof v === "number") checkNumber(node, v, at, into);
  };

  const checkObject = (node: Schema, v: Schema, at: string, depth: number, into: SchemaDrift[]): void => {
    const properties = isRecord(node.properties) ? node.properties : {};
    for (const name of Array.isArray(node.required) ? node.required : []) {
      if (typeof name === "string" && !Object.hasOwn(v, name)) {
        into.push({ jsonPath: pathAt(at, name), expected: describeSchema(properties[name], resolve), actual: "absent", kind: "missing" });
      }
    }
    for (const [name, sub] of Object.entries(v)) {
      if (Object.hasOwn(properties, name)) walk(properties[name], sub, pathAt(at, name), depth + 1, into);
      else if (node.additionalProperties === false) into.push({ jsonPath: pathAt(at, name), expected: "absent", actual: describeValue(sub), kind: "unknown" });
      else if (isRecord(node.additionalProperties)) walk(node.additionalProperties, sub, pathAt(at, name), depth + 1, into);
    }
  };

  const checkArray = (node: Schema, v: unknown[], at: string, depth: number, into: SchemaDrift[]): void => {
    if (typeof node.minItems === "number" && v.length < node.minItems) {
      into.push({ jsonPath: at, expected: `at least ${node.minItems} items`, actual: `${v.length} items`, kind: "format" });
    }
    if (typeof node.maxItems === "number" && v.length > node.maxItems) {
      into.push({ jsonPath: at, expected: `at most ${node.maxItems} items`, actual: `${v.length} items`, kind: "format" });
    }
    if (node.items !== undefined) for (let i = 0; i < v.length; i++) walk(node.items, v[i], `${at}[${i}]`, depth + 1, into);
  };

  const checkString = (node: Schema, v: string, at: string, into: SchemaDrift[]): void => {
    const length = [...v].length;
    const format = typeof node.format === "string" ? node.format : undefined;
    const expected = format ? `string (${format})` : typeof node.pattern === "string" ? `string matching ${node.pattern}` : "string";
    if (typeof node.minLength === "number" && length < node.minLength) {
      into.push({ jsonPath: at, expected: `string of at least ${node.minLength} characters`, actual: describeValue(v), kind: "format" });
    } else if (typeof node.maxLength === "number" && length > node.maxLength) {
      into.push({ jsonPath: at, expected: `string of at most ${node.maxLength} characters`, actual: `${length} characters`, kind: "format" });
    } else if (typeof node.pattern === "string" && compiled(node.pattern)?.test(v) === false) {
      into.push({ jsonPath: at, expected, actual: describeValue(v), kind: "format" });
    } else if (format && FORMATS[format]?.(v) === false) {
      into.push({ jsonPath: at, expected, actual: describeValue(v), kind: "format" });
    }
  };

  const checkNumber = (node: Schema, v: number, at: string, into: SchemaDrift[]): void => {
    const bound = (ok: boolean, expected: string) => {
      if (!ok) into.push({ jsonPath: at, expected, actual: String(v), kind: "format" });
    };
    if (typeof node.minimum === "number") bound(v >= node.minimum, `at least ${node.minimum}`);
    if (typeof node.maximum === "number") bound(v <= node.maximum, `at most ${node.maximum}`);
    if (typeof node.exclusiveMinimum === "number") bound(v > node.exclusiveMinimum, `more than ${node.exclusiveMinimum}`);
    if (typeof node.exclusiveMaximum === "number") bound(v < node.exclusiveMaximum, `less than ${node.exclusiveMaximum}`);
  };

  walk(schema, value, options.at ?? "$", 0, out);
  return out;
}
