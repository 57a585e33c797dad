/**
 * The route table, as one step of the request's way. For each route, in this order: the
 * caller is authenticated (401/403), the instance is found and access checked
 * (404/403), the query and body are validated against the route's schemas
 * (422), then the handler runs. Whatever is thrown is answered by `sendError`.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { z } from "zod";
import { routes, type OperationId, type PathParams, type RouteSpec, type Routes } from "../../shared/api.js";
import type { EmulatorEnv } from "../env.js";
import { MAX_JSON_DEPTH, deeperThan } from "../../shared/json-depth.js";
import { ApiError, methodNotAllowed, notFound, notImplemented, sendError, validationError } from "../errors.js";
import type { InstanceRecord } from "../store/state.js";
import { authenticate, authorizeAdmin, authorizeInstance, requireOrgKey, type Caller } from "./auth.js";
import { RouteTable } from "../../shared/http/route-table.js";

/** Returned by handlers that wrote the response themselves (streams, downloads). */
export const HANDLED = Symbol("handled");

type AccessOf<S> = S extends { access: infer A } ? A : never;

export interface Ctx<S extends RouteSpec> {
  params: { [K in PathParams<S["path"]>]: string };
  body: [S["body"]] extends [undefined] ? undefined : z.output<NonNullable<S["body"]>>;
  query: [S["query"]] extends [undefined] ? undefined : z.output<NonNullable<S["query"]>>;
  caller: AccessOf<S> extends { kind: "org" | "instance" } ? Caller : undefined;
  instance: AccessOf<S> extends { kind: "instance" } ? InstanceRecord : undefined;
  req: Request;
  res: Response;
}

type Result<S extends RouteSpec> = S["response"] extends z.ZodType
  ? z.input<S["response"]>
  : S["response"] extends "empty"
    ? void
    : S["response"] extends "any"
      ? unknown
      : never;

export type Handler<S extends RouteSpec> = (ctx: Ctx<S>) => Promise<Result<S> | typeof HANDLED> | Result<S> | typeof HANDLED;
export type Handlers = { [K in OperationId]: Handler<Routes[K]> };

export interface MountOptions {
  /** Parse every success body with its schema: catches drift from the spec in tests. */
  validateResponses?: boolean;
}

/**
 * The route table as one step (shared/http/route-table.ts says why and which of express's rules it
 * keeps): a request for a route is answered, a known path with another method gets its 405,
 * anything else goes on (`next()`) to the layers after it.
 */
export function apiRoutes(env: EmulatorEnv, handlers: Partial<Handlers>, options: MountOptions = {}): RequestHandler {
  type Answer = (req: Request, res: Response, next: NextFunction) => Promise<void>;
  const api = new RouteTable<Answer>();
  // The console acts for an organization through `/_emulator/as/{organization_id}/v1/...`
  // (control-plane access, see `prepare`): one implementation of every route for both.
  const actAs = new RouteTable<Answer>();
  for (const [id, spec] of Object.entries(routes) as [OperationId, RouteSpec][]) {
    const answer = answerOf(env, id, spec, handlers[id] as Handler<RouteSpec> | undefined, options);
    api.add(spec.method, spec.path, answer);
    if (spec.access.kind !== "admin") actAs.add(spec.method, `${ACT_AS_PREFIX}/{${ACT_AS_PARAM}}${spec.path}`, answer);
  }
  return (req: Request, res: Response, next: NextFunction) => {
    const path = req.path;
    const found = api.match(req.method, path);
    const route = found?.kind === "route" ? found : actAs.match(req.method, path);
    if (route?.kind === "route") {
      req.params = route.params;
      void route.value(req, res, next);
      return;
    }
    if (found?.kind !== "wrong_method") return next();
    // A known path with a method it does not have: 405 naming the ones it has.
    res.locals.unmatched = "wrong_method";
    sendError(res.setHeader("Allow", found.allow), methodNotAllowed(found.allow));
  };
}

/** One route's steps: prepare (auth, instance, validation), the handler, then the answer or the error. */
function answerOf(env: EmulatorEnv, id: OperationId, spec: RouteSpec, handler: Handler<RouteSpec> | undefined, options: MountOptions) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    res.locals.route = id;
    if (req.params.instance_id !== undefined) res.locals.instanceId = req.params.instance_id;
    try {
      const ctx = prepare(env, spec, req, res);
      if (!handler) throw notImplemented(`${spec.method} ${spec.path}`);
      const result = await handler(ctx);
      if (result === HANDLED) return;
      // A write is answered once it is on disk (reads do not wait for anyone's writes).
      if (spec.method !== "GET") await env.store.durable();
      if (spec.status === 204 || spec.response === "empty") {
        res.status(spec.status).end();
        return;
      }
      const body = options.validateResponses && typeof spec.response === "object" ? spec.response.parse(result) : result;
      sendJson(res, spec.status, body);
    } catch (error) {
      if (res.headersSent) return next(error);
      if (error instanceof ApiError && error.status === 401 && req.headers.authorization !== undefined) res.locals.unmatched = "unknown_key";
      sendError(res, error);
    }
  };
}

/**
 * What express's `res.status(n).json(body)` sends, the same bytes and headers, without its steps
 * for cases an answer here never has (a JSONP callback, an ETag, settings looked up per call):
 * the hottest line of every answered route. An answer that is not JSON text goes through express.
 */
function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body) as string | undefined;
  if (text === undefined) return void res.status(status).json(body);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  // As express: a HEAD answer has the GET's headers and no body (none reaches the request log either).
  res.end(res.req.method === "HEAD" ? undefined : text, "utf8");
}

/** Where the console calls the `/v1` routes as an organization (control-plane access required). */
export const ACT_AS_PREFIX = "/_emulator/as";
const ACT_AS_PARAM = "act_as_organization";

function prepare(env: EmulatorEnv, spec: RouteSpec, req: Request, res: Response): Ctx<RouteSpec> {
  const params = req.params as Record<string, string>;
  let caller: Caller | undefined;
  let instance: InstanceRecord | undefined;
  const actAs = params[ACT_AS_PARAM];
  if (actAs !== undefined && (spec.access.kind === "org" || spec.access.kind === "instance")) {
    authorizeAdmin(env, req);
    const organization = Object.hasOwn(env.store.data.organizations, actAs) ? env.store.data.organizations[actAs] : undefined;
    if (!organization) throw notFound(`Organization ${actAs} not found.`);
    res.locals.keyKind = "none";
    caller = { kind: "org", organization };
    if (params.instance_id !== undefined) instance = env.settle(authorizeInstance(env, caller, spec.access, params.instance_id));
    return finishPrepare(spec, req, res, params, caller, instance);
  }
  if (actAs !== undefined) authorizeAdmin(env, req);
  switch (spec.access.kind) {
    case "admin":
      authorizeAdmin(env, req);
      res.locals.keyKind = "none";
      break;
    case "org":
      caller = authenticate(env, req.headers.authorization);
      res.locals.keyKind = caller.kind;
      requireOrgKey(caller);
      // An organization-only route that names an instance (delete) still answers
      // 404 for an unknown, foreign or terminated one.
      if (params.instance_id !== undefined) instance = authorizeInstance(env, caller, spec.access, params.instance_id);
      break;
    case "instance":
      caller = authenticate(env, req.headers.authorization);
      res.locals.keyKind = caller.kind;
      instance = env.settle(authorizeInstance(env, caller, spec.access, params.instance_id!));
      break;
    case "public":
      res.locals.keyKind = "none";
      break;
  }
  return finishPrepare(spec, req, res, params, caller, instance);
}

function finishPrepare(
  spec: RouteSpec,
  req: Request,
  res: Response,
  params: Record<string, string>,
  caller: Caller | undefined,
  instance: InstanceRecord | undefined,
): Ctx<RouteSpec> {
  let query: unknown;
  if (spec.query) {
    const parsed = spec.query.safeParse(req.query);
    if (!parsed.success) throw validationError("query", parsed.error);
    query = parsed.data;
  }
  let body: unknown;
  if (spec.body) {
    // Before the schema (zod recurses) and before anything is applied.
    const limit = spec.maxDepth ?? MAX_JSON_DEPTH;
    if (deeperThan(req.body, limit)) throw new ApiError(422, [{ loc: ["body"], msg: `JSON nested deeper than ${limit} levels`, type: "too_deep" }]);
    const parsed = spec.body.safeParse(req.body ?? undefined);
    if (!parsed.success) throw validationError("body", parsed.error);
    body = parsed.data;
  }
  return { params, body, query, caller, instance, req, res } as Ctx<RouteSpec>;
}
