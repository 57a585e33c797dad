/**
 * The typed client's cancellation and its errors by where they failed,
 * against the emulator on a real loopback port. The emulator runs on a
 * counted manual clock: `!sleep 60000` holds the gateway until the test moves
 * time, so "the request was closed while the model still ran" is seen in the
 * emulator's own request log (a line is written when the client leaves, or
 * when the answer is sent), never by sleeping.
 */
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServiceClient, ServiceError, type ServiceClient } from "../../shared/client/index.js";
import { createCountedClock } from "../helpers/counted-clock.js";
import { deadPort, runningInstance, signupOrg, startEmulator, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator;
const clock = createCountedClock();
let baseUrl: string;
let api: ServiceClient;
let instanceId: string;

beforeAll(async () => {
  t = await startEmulator({ clock });
  baseUrl = await t.emulator.listen(0, "127.0.0.1");
  const org = await signupOrg(t.app);
  instanceId = (await runningInstance(t, org)).id;
  api = createServiceClient({ baseUrl, apiKey: org.apiKey });
});
afterAll(async () => {
  await t?.close();
});

/** The console's request log: a line per request that ended, answered or left by its client ("the line still appears when the socket goes"). */
async function loggedRequests(method: string, pathEnd: string): Promise<number> {
  const res = await fetch(`${baseUrl}/_emulator/console/requests`);
  const lines = (await res.json()) as { method: string; path: string }[];
  return lines.filter((l) => l.method === method && l.path.endsWith(pathEnd)).length;
}

async function caught(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

async function serviceError(work: Promise<unknown>): Promise<ServiceError> {
  const error = await caught(work);
  if (!(error instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${String(error)}`);
  return error;
}

describe("an AbortSignal on every client method", () => {
  it("closes a non-streamed call while the model still runs: the call rejects with the signal's reason", async () => {
    const before = await loggedRequests("POST", "/session/held/responses");
    const abort = new AbortController();
    const call = api.createSessionResponse({ instance_id: instanceId, session_id: "held", body: { model: "m", input: "!sleep 60000" }, signal: abort.signal });
    // The gateway's 60 s sleep has begun: the request is at the model.
    await vi.waitFor(() => expect(clock.delays()).toContain(60_000));
    const reason = new Error("stopped by the person");
    abort.abort(reason);
    expect(await caught(call)).toBe(reason);
    // The service saw the client leave: its line is written while the model still sleeps.
    await vi.waitFor(async () => expect(await loggedRequests("POST", "/session/held/responses")).toBe(before + 1));
    expect(clock.delays()).toContain(60_000);
    t.clock.advance(60_000);
  });

  it("sends nothing when the signal is already aborted", async () => {
    const before = await loggedRequests("GET", `/instances/${instanceId}/status`);
    const abort = new AbortController();
    const reason = new Error("too late");
    abort.abort(reason);
    expect(await caught(api.getInstanceStatus({ instance_id: instanceId, signal: abort.signal }))).toBe(reason);
    // A call after it shows the log is current: only that one is there.
    await api.getInstanceStatus({ instance_id: instanceId });
    await vi.waitFor(async () => expect(await loggedRequests("GET", `/instances/${instanceId}/status`)).toBe(before + 1));
  });

  it("closes an upload part-way: the body stops being read and the service sees the client leave", async () => {
    const before = await loggedRequests("POST", "/files/upload");
    let pulls = 0;
    let firstPull!: () => void;
    const pulled = new Promise<void>((resolve) => (firstPull = resolve));
    // A body that gives one chunk and then never ends.
    const data = new Readable({
      read() {
        if (pulls++ === 0) {
          this.push(Buffer.alloc(1024, 1));
          firstPull();
        }
      },
    });
    const abort = new AbortController();
    const upload = api.uploadFile({ instance_id: instanceId, path: "workspace/never.bin", data, signal: abort.signal });
    await pulled;
    const reason = new Error("upload stopped");
    abort.abort(reason);
    expect(await caught(upload)).toBe(reason);
    await vi.waitFor(async () => expect(await loggedRequests("POST", "/files/upload")).toBe(before + 1));
  });
});

describe("ServiceError says where a call failed", () => {
  it("the service's own refusal is kind service, with the contract's detail", async () => {
    const anonymous = createServiceClient({ baseUrl });
    const refused = await serviceError(anonymous.getOrganization());
    expect(refused).toMatchObject({ kind: "service", status: 401, code: undefined });
    expect(typeof refused.detail).toBe("string");
    expect(refused.retryable).toBe(false);
    const missing = await serviceError(api.getInstanceStatus({ instance_id: "no-such-instance" }));
    expect(missing).toMatchObject({ kind: "service", status: 404 });
  });

  it("a gateway error the service relays is kind gateway, with its status and OpenAI-style code", async () => {
    const limited = await serviceError(api.createResponse({ instance_id: instanceId, body: { model: "m", input: "!fail 429" } }));
    expect(limited).toMatchObject({ kind: "gateway", status: 429, code: "simulated_failure", detail: undefined });
    const lost = await serviceError(api.createResponse({ instance_id: instanceId, body: { model: "m", input: "x", previous_response_id: "resp_nope" } }));
    expect(lost).toMatchObject({ kind: "gateway", status: 400, code: "previous_response_not_found" });
  });

  it("no answer is kind network, with the transport's error as its cause and no status", async () => {
    const offline = createServiceClient({ baseUrl: `http://127.0.0.1:${await deadPort()}` });
    const down = await serviceError(offline.listInstances());
    expect(down.kind).toBe("network");
    expect(down.status).toBeUndefined();
    expect(down.cause).toBeInstanceOf(Error);
    expect(down.message).toMatch(/^service unreachable: /);
    expect(down.retryable).toBe(true);
  });

  it("a 5xx from the service is kind service and retryable", () => {
    const error = ServiceError.fromAnswer(503, { detail: "down for maintenance" });
    expect(error).toMatchObject({ kind: "service", status: 503, detail: "down for maintenance", message: "HTTP 503: down for maintenance" });
    expect(error.retryable).toBe(true);
  });
});
