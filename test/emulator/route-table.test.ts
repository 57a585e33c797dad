/**
 * The API's route lookup (shared/http/route-table.ts) decides as express's
 * own router did when every route was a layer: the same route, the same
 * parameters, the same 405 and the same 400, for the service's real route
 * list and for paths built to hit its edges (case, trailing slashes, empty
 * and malformed segments, HEAD).
 */
import express, { type NextFunction, type Request, type Response } from "express";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { expressPath, routes, type RouteSpec } from "../../shared/api.js";
import { RouteTable } from "../../shared/http/route-table.js";

type Outcome = { route: string; params: Record<string, string> } | { allow: string } | { status: number } | "none";

const specs = Object.entries(routes) as [string, RouteSpec][];

function tableOutcome(table: RouteTable<string>, method: string, path: string): Outcome {
  try {
    const found = table.match(method, path);
    if (!found) return "none";
    return found.kind === "route" ? { route: found.value, params: found.params } : { allow: found.allow };
  } catch (error) {
    return { status: (error as { status?: number }).status ?? 500 };
  }
}

/** Express's router with a layer per route and a 405 layer per path, as the emulator had them; each answer goes to `settle`. */
let settle: (outcome: Outcome) => void = () => undefined;
const router = express.Router();
{
  const methods = new Map<string, string[]>();
  for (const [id, spec] of specs) {
    const m = spec.method.toLowerCase() as "get" | "post" | "put" | "patch" | "delete";
    router[m](expressPath(spec.path), (req: Request) => settle({ route: id, params: { ...req.params } as Record<string, string> }));
    const p = expressPath(spec.path);
    methods.set(p, [...(methods.get(p) ?? []), spec.method]);
  }
  for (const [p, allowed] of methods) {
    const allow = [...new Set(allowed.includes("GET") ? [...allowed, "HEAD"] : allowed)].join(", ");
    router.all(p, () => settle({ allow }));
  }
}

/** How that router decides (one request at a time). */
function expressOutcome(method: string, path: string): Promise<Outcome> {
  return new Promise((resolve) => {
    settle = resolve;
    const req = { method, url: path, headers: {} } as unknown as Request;
    router(req, {} as Response, ((error?: unknown) => resolve(error ? { status: (error as { status?: number }).status ?? 500 } : "none")) as NextFunction);
  });
}

const table = new RouteTable<string>();
for (const [id, spec] of specs) table.add(spec.method, spec.path, id);

const segment = fc.oneof(
  fc.constantFrom("v1", "V1", "instances", "Instances", "keys", "files", "skills", "install", "channels", "status", "_emulator", "sandboxes", "requests.har"),
  fc.constantFrom("", "%E0", "%zz", "a%2Fb", "caf%C3%A9", "inst_1", "x y"),
  fc.string({ minLength: 1, maxLength: 4 }).filter((s) => !s.includes("/") && !s.includes("?") && !s.includes("#")),
);

describe("the route table", () => {
  it("decides as express's router did, for every route's own path with each method", async () => {
    for (const [, spec] of specs) {
      const path = spec.path.replace(/\{[^}]+\}/g, "id_1");
      for (const method of ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        for (const variant of [path, `${path}/`, path.toUpperCase()]) {
          expect(tableOutcome(table, method, variant), `${method} ${variant}`).toEqual(await expressOutcome(method, variant));
        }
      }
    }
  });

  it("decides as express's router did, for paths built from the API's segments and odd ones", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("GET", "HEAD", "POST", "DELETE", "PATCH"), fc.array(segment, { minLength: 1, maxLength: 8 }), async (method, parts) => {
        const path = `/${parts.join("/")}`;
        expect(tableOutcome(table, method, path)).toEqual(await expressOutcome(method, path));
      }),
      { numRuns: 2_000, seed: 25 },
    );
  });

  it("the first route added wins where two match (a literal before a parameter, as the spec lists them)", () => {
    const t = new RouteTable<string>();
    t.add("GET", "/a/{name}", "param");
    t.add("GET", "/a/install", "literal");
    expect(t.match("GET", "/a/install")).toEqual({ kind: "route", value: "param", params: { name: "install" } });
  });
});
