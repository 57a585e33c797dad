/**
 * The API's routes as one lookup instead of one express layer each. Express
 * walks its layers in order and runs a path-to-regexp match on each; with
 * every route mounted twice (the console's act-as prefix) and a 405 layer
 * per path, a request near the end of the table paid about sixty matches
 * (bench: the scoped GET at 0.64x of express answering a fixed JSON).
 *
 * Matching keeps express 5's rules, so nothing a caller sees changes:
 * routes are tried in the order they were added; static segments match
 * case-insensitively; one trailing slash is allowed; a parameter is a
 * non-empty segment, percent-decoded (a malformed one is a 400, as the
 * router's `decodeParam` answers); HEAD is served by a GET route; a known
 * path with another method is "wrong method", naming the methods it has.
 */

type Segment = { static: string } | { param: string };

interface Compiled<T> {
  method: string;
  segments: Segment[];
  value: T;
}

export type Match<T> = { kind: "route"; value: T; params: Record<string, string> } | { kind: "wrong_method"; allow: string };

/** `/v1/instances/{instance_id}` → segments; `{name}` is a parameter. */
function compile(template: string): Segment[] {
  return template
    .split("/")
    .slice(1)
    .map((part) => (part.startsWith("{") && part.endsWith("}") ? { param: part.slice(1, -1) } : { static: part.toLowerCase() }));
}

/** As express's router decodes a parameter: a malformed escape is the caller's error (400), not ours. */
function decodeParam(value: string): string {
  if (!value.includes("%")) return value;
  try {
    return decodeURIComponent(value);
  } catch (error) {
    if (error instanceof URIError) throw Object.assign(error, { message: `Failed to decode param '${value}'`, status: 400 });
    throw error;
  }
}

/** Path parts of a pathname, without its leading slash and one trailing one. */
function partsOf(pathname: string): string[] {
  const parts = pathname.split("/").slice(1);
  if (parts.length > 1 && parts.at(-1) === "") parts.pop();
  return parts;
}

export class RouteTable<T> {
  /** Routes by their number of path parts, each list in the order added (the first that matches wins). */
  readonly #byLength = new Map<number, Compiled<T>[]>();
  /** The methods each template has, for the 405's `Allow` (GET brings HEAD). */
  readonly #methods = new Map<string, Set<string>>();
  /** Templates by their number of path parts, to tell "known path, wrong method" from "unknown path". */
  readonly #paths = new Map<number, { template: string; segments: Segment[] }[]>();

  /** Adds a route; `template` uses `{name}` for a parameter. */
  add(method: string, template: string, value: T): void {
    const segments = compile(template);
    const list = this.#byLength.get(segments.length) ?? [];
    list.push({ method: method.toUpperCase(), segments, value });
    this.#byLength.set(segments.length, list);
    const methods = this.#methods.get(template);
    if (methods) methods.add(method.toUpperCase());
    else {
      this.#methods.set(template, new Set([method.toUpperCase()]));
      const paths = this.#paths.get(segments.length) ?? [];
      paths.push({ template, segments });
      this.#paths.set(segments.length, paths);
    }
  }

  /** The route for `method` and `pathname` (raw, still percent-encoded), a known path's other methods, or undefined. Throws a 400 for a malformed parameter. */
  match(method: string, pathname: string): Match<T> | undefined {
    const parts = partsOf(pathname);
    const lower = parts.map((p) => p.toLowerCase());
    for (const route of this.#byLength.get(parts.length) ?? []) {
      const serves = route.method === method || (method === "HEAD" && route.method === "GET");
      if (!serves || !fits(route.segments, lower)) continue;
      return { kind: "route", value: route.value, params: paramsOf(route.segments, parts) };
    }
    const known = this.#paths.get(parts.length)?.find((p) => fits(p.segments, lower));
    if (!known) return undefined;
    paramsOf(known.segments, parts); // express decodes them before its 405 layer runs: a malformed one is a 400 there too
    const methods = [...this.#methods.get(known.template)!];
    return { kind: "wrong_method", allow: [...new Set(methods.includes("GET") ? [...methods, "HEAD"] : methods)].join(", ") };
  }
}

function paramsOf(segments: Segment[], parts: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  segments.forEach((s, i) => {
    if ("param" in s) params[s.param] = decodeParam(parts[i]!);
  });
  return params;
}

function fits(segments: Segment[], lower: string[]): boolean {
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    if ("static" in s ? s.static !== lower[i] : lower[i] === "") return false;
  }
  return true;
}
