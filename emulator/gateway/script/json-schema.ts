/**
 * The part of JSON Schema that structured outputs use (OpenAI's strict mode
 * subset): `type` (one or a list), `properties`, `required`,
 * `additionalProperties`, `items`, `enum`, `const`, `anyOf`, `$ref` to
 * `#/$defs/...` or `#/definitions/...`, plus annotations. The fake model
 * checks scripted objects against it and makes a deterministic object that
 * satisfies it. Our own walker rather than a validator library: the fake
 * model must also *generate* a value, so both directions need the same
 * subset, and anything outside it is refused by name instead of half-honoured.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

type Schema = Record<string, unknown>;

/** Keywords that only describe (or constrain in ways a deterministic sample already meets). */
const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$defs",
  "definitions",
  "title",
  "description",
  "default",
  "examples",
  "strict",
  "format",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
]);
const KEYWORDS = new Set(["type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref"]);
const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

const isRecord = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON path of a place inside a value or a schema, e.g. `$.items[0].name`. */
export const pathAt = (base: string, key: string | number): string =>
  typeof key === "number" ? `${base}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;

/**
 * What in `schema` is outside the supported subset, as `"<path>: <why>"`,
 * or null when all of it is supported.
 */
export function unsupportedIn(schema: unknown): string | null {
  const root = schema;
  const walk = (node: unknown, at: string, depth: number): string | null => {
    if (depth > 32) return `${at}: nested deeper than 32 levels`;
    if (!isRecord(node)) return `${at}: a schema must be an object`;
    for (const key of Object.keys(node)) {
      if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key)) return `${at}: keyword '${key}' is not supported`;
    }
    if (node.$ref !== undefined) {
      const target = resolveRef(root, node.$ref);
      return target === undefined ? `${at}.$ref: '${String(node.$ref)}' does not name a schema under #/$defs or #/definitions` : null;
    }
    const types = node.type === undefined ? [] : Array.isArray(node.type) ? node.type : [node.type];
    for (const type of types) if (typeof type !== "string" || !TYPES.has(type)) return `${at}.type: '${String(type)}' is not a JSON type`;
    if (node.enum !== undefined && (!Array.isArray(node.enum) || node.enum.length === 0)) return `${at}.enum: must be a non-empty array`;
    if (node.properties !== undefined) {
      if (!isRecord(node.properties)) return `${at}.properties: must be an object`;
      for (const [name, sub] of Object.entries(node.properties)) {
        const problem = walk(sub, pathAt(`${at}.properties`, name), depth + 1);
        if (problem) return problem;
      }
    }
    if (node.required !== undefined && (!Array.isArray(node.required) || node.required.some((r) => typeof r !== "string"))) {
      return `${at}.required: must be an array of property names`;
    }
    if (node.additionalProperties !== undefined && typeof node.additionalProperties !== "boolean") {
      const problem = walk(node.additionalProperties, `${at}.additionalProperties`, depth + 1);
      if (problem) return problem;
    }
    if (node.items !== undefined) {
      const problem = walk(node.items, `${at}.items`, depth + 1);
      if (problem) return problem;
    }
    if (node.anyOf !== undefined) {
      if (!Array.isArray(node.anyOf) || node.anyOf.length === 0) return `${at}.anyOf: must be a non-empty array`;
      for (let i = 0; i < node.anyOf.length; i++) {
        const problem = walk(node.anyOf[i], `${at}.anyOf[${i}]`, depth + 1);
        if (problem) return problem;
      }
    }
    for (const defs of ["$defs", "definitions"] as const) {
      if (at === "$" && node[defs] !== undefined) {
        if (!isRecord(node[defs])) return `$.${defs}: must be an object`;
        for (const [name, sub] of Object.entries(node[defs])) {
          const problem = walk(sub, pathAt(`$.${defs}`, name), depth + 1);
          if (problem) return problem;
        }
      }
    }
    return null;
  };
  return walk(schema, "$", 0);
}

function resolveRef(root: unknown, ref: unknown): Schema | undefined {
  if (typeof ref !== "string" || !isRecord(root)) return undefined;
  const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
  if (!match) return ref === "#" ? root : undefined;
  const defs = root[match[1]!];
  const name = decodeURIComponent(match[2]!.replace(/~1/g, "/").replace(/~0/g, "~"));
  return isRecord(defs) && Object.hasOwn(defs, name) && isRecord(defs[name]) ? defs[name] : undefined;
}

const typeOf = (value: unknown): string => (value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value);

const fits = (value: unknown, type: string): boolean => {
  const actual = typeOf(value);
  return actual === type || (type === "number" && actual === "integer");
};

/**
 * Where `value` does not satisfy `schema` (a supported one), as
 * `"<path>: <why>"`, or null when it does. `at` names the value's place.
 */
export function mismatch(schema: unknown, value: unknown, at = "$"): string | null {
  const root = schema;
  const check = (node: unknown, v: unknown, where: string, depth: number): string | null => {
    if (!isRecord(node) || depth > 64) return null;
    if (node.$ref !== undefined) return check(resolveRef(root, node.$ref), v, where, depth + 1);
    if (node.anyOf !== undefined && Array.isArray(node.anyOf)) {
      const problems = node.anyOf.map((sub) => check(sub, v, where, depth + 1));
      if (!problems.includes(null)) return problems[0] ?? `${where}: matches none of anyOf`;
    }
    if (node.const !== undefined && JSON.stringify(node.const) !== JSON.stringify(v)) return `${where}: must be ${JSON.stringify(node.const)}`;
    if (Array.isArray(node.enum) && !node.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
      return `${where}: must be one of ${JSON.stringify(node.enum)}`;
    }
    const types = node.type === undefined ? [] : Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
    if (types.length && !types.some((t) => fits(v, t))) return `${where}: expected ${types.join(" or ")}, got ${typeOf(v)}`;
    if (isRecord(v)) {
      const properties = isRecord(node.properties) ? node.properties : {};
      for (const name of Array.isArray(node.required) ? (node.required as string[]) : []) {
        if (!Object.hasOwn(v, name)) return `${pathAt(where, name)}: required property is missing`;
      }
      for (const [name, sub] of Object.entries(v)) {
        if (Object.hasOwn(properties, name)) {
          const problem = check(properties[name], sub, pathAt(where, name), depth + 1);
          if (problem) return problem;
        } else if (node.additionalProperties === false) return `${pathAt(where, name)}: property is not allowed`;
        else if (isRecord(node.additionalProperties)) {
          const problem = check(node.additionalProperties, sub, pathAt(where, name), depth + 1);
          if (problem) return problem;
        }
      }
    }
    if (Array.isArray(v) && node.items !== undefined) {
      for (let i = 0; i < v.length; i++) {
        const problem = check(node.items, v[i], `${where}[${i}]`, depth + 1);
        if (problem) return problem;
      }
    }
    return null;
  };
  return check(schema, value, at, 0);
}

/**
 * A deterministic value that satisfies a supported schema: the first
 * `const`/`enum`/`anyOf` choice, `"<name>"` for a string (its property name,
 * or `text`), 0 for numbers, false, null, one item for an array, every
 * property for an object.
 */
export function sampleOf(schema: unknown): JsonValue {
  const root = schema;
  const make = (node: unknown, name: string, depth: number): JsonValue => {
    if (!isRecord(node) || depth > 32) return null;
    if (node.$ref !== undefined) return make(resolveRef(root, node.$ref), name, depth + 1);
    if (node.const !== undefined) return node.const as JsonValue;
    if (Array.isArray(node.enum) && node.enum.length) return node.enum[0] as JsonValue;
    if (Array.isArray(node.anyOf) && node.anyOf.length) return make(node.anyOf[0], name, depth + 1);
    const type = Array.isArray(node.type) ? node.type[0] : node.type;
    switch (type) {
      case "string":
        return name;
      case "number":
      case "integer":
        return typeof node.minimum === "number" ? Math.ceil(node.minimum) : 0;
      case "boolean":
        return false;
      case "null":
        return null;
      case "array":
        return [make(node.items, name, depth + 1)];
      default: {
        const out: { [key: string]: JsonValue } = {};
        const properties = isRecord(node.properties) ? node.properties : {};
        for (const [key, sub] of Object.entries(properties)) out[key] = make(sub, key, depth + 1);
        return out;
      }
    }
  };
  return make(schema, "text", 0);
}
