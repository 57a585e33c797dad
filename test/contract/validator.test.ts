/**
 * The contract checker: real answers of the emulator (over real HTTP) give no
 * drift, and each kind of departure a real service could make is named by
 * route, JSON path, what the contract says and what came, and nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createContractValidator, Drift, parseEventStream } from "../../shared/contract/index.js";
import { runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

const contract = createContractValidator();
let t: TestEmulator;
let base: string;
let org: TestOrg;
let instanceId: string;

beforeAll(async () => {
  t = await startEmulator();
  base = await t.emulator.listen(0, "127.0.0.1");
  org = await signupOrg(t.app);
  instanceId = (await runningInstance(t, org)).id;
});
afterAll(async () => {
  await t?.close();
});

/** Calls the emulator and checks its answer as text, the way the proxy sees it. */
async function exchange(method: string, path: string, body?: unknown): Promise<{ status: number; text: string; headers: Headers; drifts: Drift[] }> {
  const res = await fetch(base + path, {
    method,
    headers: { ...org.auth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const match = contract.matchRoute(method, path);
  if (!match) throw new Error(`no route for ${method} ${path}`);
  const drifts = contract.checkResponseText({ method, route: match.template, status: res.status, headers: res.headers, text });
  return { status: res.status, text, headers: res.headers, drifts };
}

describe("routes", () => {
  it("finds the template of a concrete path, literal segments before parameters", () => {
    expect(contract.matchRoute("get", `/v1/instances/${instanceId}/files/content?path=a`)).toEqual({
      route: "GET /v1/instances/{instance_id}/files/content",
      method: "GET",
      template: "/v1/instances/{instance_id}/files/content",
      params: { instance_id: instanceId },
    });
    expect(contract.matchRoute("POST", "/v1/instances/x/session/a%20b/responses")?.params).toEqual({ instance_id: "x", session_id: "a b" });
    expect(contract.matchRoute("PUT", "/v1/organization")).toBeUndefined();
    expect(contract.checkResponse({ method: "GET", route: "/v1/nothing", status: 200 })).toEqual([
      { route: "GET /v1/nothing", jsonPath: "route", expected: "a route of the contract", actual: "GET /v1/nothing", kind: "route" },
    ]);
  });
});

describe("a faithful server", () => {
  it("gives no drift on answers, errors and streams of the emulator", async () => {
    const answers = [
      await exchange("GET", "/v1/organization"),
      await exchange("GET", "/v1/subscription"),
      await exchange("GET", "/v1/instances"),
      await exchange("GET", `/v1/instances/${instanceId}`),
      await exchange("GET", `/v1/instances/${instanceId}/status`),
      await exchange("POST", "/v1/keys", { name: "k", instance_ids: [instanceId], permissions: ["read"] }),
      await exchange("GET", "/v1/keys"),
      await exchange("GET", `/v1/instances/${instanceId}/channels`),
      await exchange("GET", `/v1/instances/${instanceId}/skills`),
      await exchange("GET", `/v1/instances/${instanceId}/files`),
      await exchange("PUT", `/v1/instances/${instanceId}/files/content`, { path: "a.txt", content: "hi" }),
      await exchange("GET", `/v1/instances/${instanceId}/files/content?path=a.txt`),
      await exchange("GET", `/v1/instances/${instanceId}/files/download?path=a.txt`),
      await exchange("POST", `/v1/instances/${instanceId}/responses`, { model: "m", input: "hello" }),
      await exchange("POST", `/v1/instances/${instanceId}/responses`, { model: "m", input: "hello", stream: true }),
      await exchange("GET", "/v1/instances/00000000-0000-4000-8000-000000000000"),
      await exchange("POST", "/v1/instances", { name: "" }),
      await exchange("POST", `/v1/instances/${instanceId}/responses`, { model: "m", input: "hi", previous_response_id: "resp_missing" }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 201, 200, 200, 200, 200, 204, 200, 200, 200, 200, 404, 422, 400]);
    expect(answers.flatMap((a) => a.drifts)).toEqual([]);
  });

  it("gives no drift on requests the contract accepts", () => {
    expect(contract.checkRequest({ method: "POST", route: "/v1/instances/{instance_id}/responses", body: { model: "m", input: "hi", extra: 1 } })).toEqual([]);
    expect(contract.checkRequest({ method: "GET", route: "/v1/instances/{instance_id}/files/content", query: new URLSearchParams("path=a") })).toEqual([]);
  });
});

describe("drift", () => {
  it("names a renamed field as one missing and one unknown", async () => {
    const { text, headers } = await exchange("GET", `/v1/instances/${instanceId}`);
    const { name, ...rest } = JSON.parse(text) as Record<string, unknown>;
    const drifts = contract.checkResponse({ method: "GET", route: "/v1/instances/{instance_id}", status: 200, headers, body: { ...rest, title: name } });
    expect(drifts).toEqual([
      { route: "GET /v1/instances/{instance_id}", jsonPath: "$.name", expected: "string", actual: "absent", kind: "missing" },
      { route: "GET /v1/instances/{instance_id}", jsonPath: "$.title", expected: "absent", actual: '"agent"', kind: "unknown" },
    ]);
  });

  it("names a wrong type, an enum value out of the list and a malformed timestamp, deep in a list", async () => {
    const { text, headers } = await exchange("GET", "/v1/instances");
    const list = JSON.parse(text) as Record<string, unknown>[];
    list[0] = { ...list[0], status: "paused", region: 3, created_at: "yesterday" };
    const drifts = contract.checkResponse({ method: "GET", route: "/v1/instances", status: 200, headers, body: list });
    expect(drifts.map((d) => [d.jsonPath, d.kind, d.actual])).toEqual([
      ["$[0].status", "enum", '"paused"'],
      ["$[0].region", "type", "integer"],
      ["$[0].created_at", "format", '"yesterday"'],
    ]);
    expect(drifts[0]!.expected).toMatch(/^one of: provisioning, running, /);
    expect(drifts[1]!.expected).toBe("string or null");
  });

  it("names a status the route does not list, and checks no body against a guess", () => {
    const drifts = contract.checkResponse({ method: "GET", route: "/v1/organization", status: 418, headers: { "content-type": "application/json" }, body: {} });
    expect(drifts).toEqual([{ route: "GET /v1/organization", jsonPath: "status", expected: "200, 401, 403", actual: "418", kind: "status" }]);
  });

  it("names an error body that dropped its field, and a content type the contract does not list", () => {
    const json = { "content-type": "application/json; charset=utf-8" };
    expect(contract.checkResponse({ method: "GET", route: "/v1/instances/{instance_id}", status: 404, headers: json, body: {} })).toEqual([
      {
        route: "GET /v1/instances/{instance_id}",
        jsonPath: "$.detail",
        expected: "string or array of ValidationIssue or object",
        actual: "absent",
        kind: "missing",
      },
    ]);
    expect(
      contract.checkResponseText({ method: "GET", route: "/v1/organization", status: 200, headers: { "content-type": "text/html" }, text: "<p>" }),
    ).toEqual([{ route: "GET /v1/organization", jsonPath: "headers.content-type", expected: "application/json", actual: "text/html", kind: "content_type" }]);
    expect(contract.checkResponseText({ method: "GET", route: "/v1/organization", status: 200, headers: json, text: "{oops" })[0]).toMatchObject({
      jsonPath: "$",
      kind: "body",
    });
    expect(contract.checkResponseText({ method: "DELETE", route: "/v1/keys/{key_id}", status: 204, text: "{}" })[0]).toMatchObject({
      kind: "body",
      expected: "no body",
    });
  });

  it("checks the headers the contract names: retry-after on a rate limit", () => {
    const body = { error: { type: "rate_limit", code: null, param: null, message: "slow down" } };
    const route = "/v1/instances/{instance_id}/responses";
    expect(contract.checkResponse({ method: "POST", route, status: 429, headers: { "content-type": "application/json", "retry-after": "2" }, body })).toEqual(
      [],
    );
    expect(
      contract.checkResponse({ method: "POST", route, status: 429, headers: { "content-type": "application/json", "retry-after": "soon" }, body }),
    ).toEqual([{ route: `POST ${route}`, jsonPath: "headers.retry-after", expected: "integer", actual: "string", kind: "header" }]);
  });

  it("names an unknown stream event and a malformed known one, and nothing else of a real stream", async () => {
    const route = "/v1/instances/{instance_id}/responses";
    const { text } = await exchange("POST", `/v1/instances/${instanceId}/responses`, { model: "m", input: "hello", stream: true });
    const events = parseEventStream(text);
    expect(events.at(-1)?.event).toBe("response.completed");
    const delta = events.findIndex((e) => e.event === "response.output_text.delta");
    const broken = { ...(JSON.parse(events[delta]!.data) as Record<string, unknown>), delta: 7 };
    const drifted = [
      ...events.slice(0, delta),
      { event: "response.reasoning.delta", data: JSON.stringify({ type: "response.reasoning.delta", delta: "hm" }) },
      { event: "response.output_text.delta", data: JSON.stringify(broken) },
      ...events.slice(delta + 1),
    ];
    expect(contract.checkStream({ method: "POST", route, events: drifted })).toEqual([
      { route: `POST ${route}`, jsonPath: `events[${delta}]`, expected: "a known event type", actual: '"response.reasoning.delta"', kind: "unknown_event" },
      { route: `POST ${route}`, jsonPath: `events[${delta + 1}].delta`, expected: "string", actual: "integer", kind: "type" },
    ]);
  });

  it("names a stream that ends without a terminal event", () => {
    const route = "/v1/instances/{instance_id}/responses";
    const drifts = contract.checkStream({ method: "POST", route, events: [] });
    expect(drifts).toEqual([
      {
        route: `POST ${route}`,
        jsonPath: "events",
        expected: "a terminal event (response.completed, response.failed, response.incomplete, error)",
        actual: "none",
        kind: "stream",
      },
    ]);
    expect(contract.checkStream({ method: "POST", route, events: [], ended: false })).toEqual([]);
  });

  it("checks requests against the request schemas", () => {
    const drifts = contract.checkRequest({ method: "POST", route: "/v1/instances/{instance_id}/responses", body: { input: "hi", stream: "yes" } });
    expect(drifts.map((d) => [d.jsonPath, d.kind, d.side])).toEqual([
      ["$.model", "missing", "request"],
      ["$.stream", "type", "request"],
    ]);
    expect(contract.checkRequest({ method: "GET", route: "/v1/instances/{instance_id}/files/content" })).toEqual([
      {
        route: "GET /v1/instances/{instance_id}/files/content",
        jsonPath: "query.path",
        expected: "present",
        actual: "absent",
        kind: "missing",
        side: "request",
      },
    ]);
  });

  it("writes drifts the report schema reads back", () => {
    const drifts = contract.checkResponse({ method: "GET", route: "/v1/organization", status: 500 });
    expect(Drift.array().parse(JSON.parse(JSON.stringify(drifts)))).toEqual(drifts);
  });
});
