/**
 * No silent 500s: every answer carries an `x-request-id` (a caller's own kept
 * when it is a safe token), and an unexpected error (here: the emulator's
 * randomness failing while it mints an id, a bug's stand-in) is answered 500
 * naming that id, logged exactly once with the method, route, path and
 * sandbox, and shown on the events stream and in the journals under the same
 * id. The typed client's `ServiceError` carries the id it was answered with.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { pino } from "pino";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { cryptoRandom, type Random } from "../../shared/random.js";
import { createServiceClient, ServiceError } from "../../shared/client/index.js";
import request from "supertest";
import { signupOrg, silent500s, startEmulator } from "../helpers/emulator.js";
import { dataOf, openSse } from "../helpers/sse-client.js";

/** A raw service key: what must never reach a log line. */
const SECRET = `svc_org_${"ab".repeat(32)}`;

/** Randomness that throws while `broken` is set: a dependency failing where no route expects it. */
function breakableRandom(): Random & { broken: boolean } {
  const random = {
    broken: false,
    bytes(n: number) {
      if (random.broken) throw new Error(`entropy source failed (last key ${SECRET})`);
      return cryptoRandom.bytes(n);
    },
    float: () => cryptoRandom.float(),
  };
  return random;
}

/** The emulator's log, as a test reads it: one parsed object per line. */
function logSink() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ base: null }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { lines, logger };
}

let emulator: Emulator | undefined;

async function start() {
  const random = breakableRandom();
  const sink = logSink();
  const made = await createEmulator({ provisionMs: 0, validateResponses: true, random, logger: sink.logger });
  emulator = made;
  // Unless the test closed it itself (and let go of it).
  onTestFinished(async () => {
    if (emulator !== made) return;
    emulator = undefined;
    await made.close();
  });
  const url = await emulator.listen(0, "127.0.0.1");
  return { url, random, ...sink };
}

async function call(url: string, method: string, path: string, options: { body?: unknown; key?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
    body: options.body === undefined ? null : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, requestId: res.headers.get("x-request-id"), body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

async function signup(url: string, headers: Record<string, string> = {}) {
  const res = await call(url, "POST", "/v1/organization/signup", { body: { name: "acme" }, headers });
  expect(res.status).toBe(201);
  const key = res.body.api_key as string;
  await call(url, "PATCH", "/v1/organization", { key, body: { model_api_keys: { anthropic: "sk-ant-test" } } });
  return key;
}

describe("request ids", () => {
  it("every answer carries one, minted per request, success, refusal and unknown path alike", async () => {
    const { url } = await start();
    const answers = [
      await call(url, "GET", "/_emulator/health"),
      await call(url, "GET", "/v1/organization"),
      await call(url, "GET", "/v1/nothing-here"),
      await call(url, "POST", "/v1/organization/signup", { body: { name: "" } }),
    ];
    const ids = answers.map((a) => a.requestId);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{8}[0-9a-z]{6,}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("keeps a caller's own id when it is a short safe token, and mints one instead of anything else", async () => {
    const { url } = await start();
    expect((await call(url, "GET", "/_emulator/health", { headers: { "x-request-id": "ci-run-42.step_7:a" } })).requestId).toBe("ci-run-42.step_7:a");
    for (const unsafe of ["a".repeat(129), "has space", 'quote"d', "semi;colon", SECRET, "üñï"]) {
      const { requestId } = await call(url, "GET", "/_emulator/health", { headers: { "x-request-id": unsafe } });
      expect(requestId).toMatch(/^req_/);
    }
  });
});

describe("an unexpected error", () => {
  it("is answered 500 in the contract's form naming the request id, and logged once with method, route, path and sandbox", async () => {
    const { url, random, lines } = await start();
    const key = await signup(url);
    random.broken = true;
    const failed = await call(url, "POST", "/v1/instances", { key, body: { name: "one" } });
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({ detail: `Internal error (request id ${failed.requestId}).` });

    // The line is written when the server finishes the answer, before the client has read it.
    const line = lines.find((l) => l.request_id === failed.requestId);
    expect(line).toMatchObject({
      level: 50,
      request_id: failed.requestId,
      method: "POST",
      route: "createInstance",
      path: "/v1/instances",
      sandbox_id: null,
      status: 500,
      error: { type: "Error", message: expect.stringContaining("entropy source failed"), stack: expect.stringContaining("bytes") },
    });
    expect(lines).toHaveLength(1);
    // The error's text had a raw key in it: the log has it cut out.
    expect(JSON.stringify(lines)).not.toContain(SECRET);

    // A second failure is a second line, with its own id; answers that were not errors leave none.
    const again = await call(url, "POST", "/v1/instances", { key, body: { name: "two" } });
    expect(again.status).toBe(500);
    random.broken = false;
    expect((await call(url, "POST", "/v1/instances", { key, body: { name: "three" } })).status).toBe(201);
    expect(lines.map((l) => l.request_id)).toEqual([failed.requestId, again.requestId]);

    // The request journal lists both under the same ids.
    const journal = (await call(url, "GET", "/_emulator/requests")).body as unknown as { status: number; request_id: string }[];
    expect(journal.filter((j) => j.status === 500).map((j) => j.request_id)).toEqual([failed.requestId, again.requestId]);
  });

  it("inside a sandbox: the log line, the sandbox's journal and the events stream name the sandbox and the id", async () => {
    const { url, random, lines } = await start();
    const sandbox = await emulator!.sandboxes.create();
    const stream = await openSse(`${url}/_emulator/events`);
    onTestFinished(() => stream.close());
    await call(url, "PATCH", "/v1/organization", { key: sandbox.apiKey, body: { model_api_keys: { anthropic: "sk-ant-test" } } });
    random.broken = true;
    const failed = await call(url, "POST", "/v1/instances", { key: sandbox.apiKey, body: { name: "one" }, headers: { "x-request-id": "suite-7" } });
    random.broken = false;
    expect(failed).toMatchObject({ status: 500, requestId: "suite-7", body: { detail: "Internal error (request id suite-7)." } });

    const error = await stream.next((f) => f.event === "error");
    expect(dataOf(error)).toMatchObject({ request_id: "suite-7", method: "POST", route: "createInstance", sandbox_id: sandbox.id, status: 500 });
    const request = await stream.next((f) => f.event === "request" && dataOf(f).status === 500);
    expect(dataOf(request)).toMatchObject({ request_id: "suite-7", path: "/v1/instances" });
    expect(lines).toEqual([expect.objectContaining({ request_id: "suite-7", sandbox_id: sandbox.id, route: "createInstance" })]);
    expect(sandbox.requests({ status: 500 })).toEqual([expect.objectContaining({ request_id: "suite-7", route: "createInstance" })]);
  });

  it("reaches the typed client as a ServiceError carrying the id the service answered with", async () => {
    const { url, random, lines } = await start();
    const api = createServiceClient({ baseUrl: url, apiKey: await signup(url) });
    random.broken = true;
    const error = await api.createInstance({ body: { name: "one" } }).catch((e: unknown) => e);
    random.broken = false;
    expect(error).toBeInstanceOf(ServiceError);
    const failure = error as ServiceError;
    expect(failure).toMatchObject({ kind: "service", status: 500, retryable: true });
    expect(failure.requestId).toMatch(/^req_/);
    expect(failure.message).toBe(`HTTP 500: Internal error (request id ${failure.requestId}).`);
    expect(lines.map((l) => l.request_id)).toEqual([failure.requestId]);
    // A refusal carries its id too.
    const refused = (await api.getInstance({ instance_id: "inst_missing" }).catch((e: unknown) => e)) as ServiceError;
    expect(refused.status).toBe(404);
    expect(refused.requestId).toMatch(/^req_/);
  });
});

describe("the suite's guard against silent 500s", () => {
  it("fails a test whose emulator answered a 500 that left no log line, and passes one that logged it", async () => {
    for (const silenced of [true, false]) {
      const random = breakableRandom();
      const t = await startEmulator({ random, ...(silenced ? { logger: pino({ level: "silent" }) } : {}) });
      const { auth } = await signupOrg(t.app);
      random.broken = true;
      const failed = await request(t.app).post("/v1/instances").set(auth).send({ name: "one" });
      random.broken = false;
      expect(failed.status, failed.text).toBe(500);
      if (silenced) {
        expect(silent500s(t.emulator, t.errorLog)).toEqual([`POST /v1/instances (${failed.headers["x-request-id"]})`]);
        await expect(t.close()).rejects.toThrow(/500 answers without exactly one log line: POST \/v1\/instances/);
      } else {
        expect(t.errorLog).toEqual([expect.objectContaining({ request_id: failed.headers["x-request-id"], route: "createInstance" })]);
        await t.close();
      }
    }
  });
});
