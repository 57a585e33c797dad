/**
 * `GET /_emulator/events` over real HTTP: event types and payloads, secrets
 * never on the wire, heartbeats, a clean end on close, the bounded backlog of
 * a slow client, and the control plane's access rule (token, Host check).
 */
import { request as httpRequest } from "node:http";
import { describe, expect, it, onTestFinished } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { createEventHub, createSseClient, type SseSink } from "../../emulator/events/hub.js";
import { isAllowedHost } from "../../emulator/http/auth.js";
import { dataOf, openSse, type SseReader } from "../helpers/sse-client.js";

let emulator: Emulator | undefined;

async function start(options: Parameters<typeof createEmulator>[0] = {}): Promise<string> {
  const made = await createEmulator({ provisionMs: 0, validateResponses: true, ...options });
  emulator = made;
  // Unless the test closed it itself (and let go of it).
  onTestFinished(async () => {
    if (emulator !== made) return;
    emulator = undefined;
    await made.close();
  });
  return emulator.listen(0, "127.0.0.1");
}

async function events(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const reader = await openSse(`${url}/_emulator/events`, headers);
  onTestFinished(() => reader.close());
  return reader;
}

/** A raw request with any Host header (fetch will not let a test set it). */
function call(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function json<T = Record<string, unknown>>(url: string, method: string, body?: unknown, key?: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

describe("events stream", () => {
  it("says hello, then streams requests, state changes and turns with documented payloads", async () => {
    const url = await start();
    const stream = await events(url);
    expect(stream.response.statusCode).toBe(200);
    expect(stream.response.headers["content-type"]).toMatch(/^text\/event-stream/);
    const hello = dataOf(await stream.next((f) => f.event === "hello"));
    expect(hello.version).toBeTypeOf("string");

    const signup = await json<{ api_key: string; organization: { id: string } }>(`${url}/v1/organization/signup`, "POST", { name: "acme" });
    const key = signup.body.api_key;
    const line = dataOf(await stream.next((f) => f.event === "request" && dataOf(f).path === "/v1/organization/signup"));
    expect(line).toMatchObject({ method: "POST", path: "/v1/organization/signup", status: 201, key_kind: "none" });
    expect(line.id).toBeTypeOf("number");
    expect(line.ms).toBeTypeOf("number");
    await stream.next((f) => f.event === "state");

    await json(`${url}/v1/organization`, "PATCH", { model_api_keys: { anthropic: "sk-ant-provider-secret-value" } }, key);
    const created = await json<{ id: string }>(`${url}/v1/instances`, "POST", { name: "agent" }, key);
    expect(created.status).toBe(201);
    await stream.next((f) => f.event === "request" && dataOf(f).path === "/v1/instances" && dataOf(f).key_kind === "org");

    const sent = await json<{ id: string }>(
      `${url}/v1/instances/${created.body.id}/session/chat-1/responses`,
      "POST",
      { model: "m", input: "hello there" },
      key,
    );
    expect(sent.status).toBe(200);
    const turn = dataOf(await stream.next((f) => f.event === "turn"));
    expect(turn).toMatchObject({
      instance_id: created.body.id,
      session: "chat-1",
      id: sent.body.id,
      previous_response_id: null,
      input_text: "hello there",
      model: "m",
    });
    expect(turn.output_text).toContain("hello there");
    expect(turn.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), total_tokens: expect.any(Number) });

    // Secrets never cross the stream, and the captured bodies are redacted.
    expect(stream.text).not.toContain(key);
    expect(stream.text).not.toContain("sk-ant-provider-secret-value");
    const signupLine = dataOf<{ id: number }>(stream.frames.find((f) => f.event === "request" && dataOf(f).path === "/v1/organization/signup")!);
    const detail = await json<{ response: { body: { api_key: string } } }>(`${url}/_emulator/console/requests/${signupLine.id}`, "GET");
    expect(detail.status).toBe(200);
    expect(detail.body.response.body.api_key).toBe("<redacted>");
    const patchLine = dataOf<{ id: number }>(stream.frames.find((f) => f.event === "request" && dataOf(f).method === "PATCH")!);
    const patch = await json<{ request: { body: unknown } }>(`${url}/_emulator/console/requests/${patchLine.id}`, "GET");
    expect(patch.body.request.body).toEqual({ model_api_keys: { anthropic: "<redacted>" } });
    expect(JSON.stringify(emulator!.events)).not.toContain(key);
  });

  it("sends heartbeat comments on an idle stream", async () => {
    const url = await start({ eventsHeartbeatMs: 20 });
    const stream = await events(url);
    const ping = await stream.next((f) => f.comments.includes("ping"));
    expect(ping.event).toBeUndefined();
  });

  it("ends every stream cleanly when the emulator closes", async () => {
    const url = await start();
    const stream = await events(url);
    await stream.next((f) => f.event === "hello");
    expect(emulator!.events.clients).toBe(1);
    await emulator!.close();
    await stream.ended;
    expect(stream.response.complete).toBe(true);
    emulator = undefined;
  });

  it("forgets a client that goes away", async () => {
    const url = await start();
    const stream = await events(url);
    await stream.next((f) => f.event === "hello");
    stream.close();
    await expect.poll(() => emulator!.events.clients).toBe(0);
  });

  it("refuses streams past eventsMaxClients with 503 in the contract's format, and admits one when another leaves", async () => {
    const url = await start({ eventsMaxClients: 2 });
    const a = await events(url);
    const b = await events(url);
    await a.next((f) => f.event === "hello");
    await b.next((f) => f.event === "hello");
    const refused = await call(url, "/_emulator/events");
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toEqual({ detail: expect.stringContaining("Too many event streams") });
    a.close();
    await expect.poll(() => emulator!.events.clients).toBe(1);
    const c = await events(url);
    await c.next((f) => f.event === "hello");
  });
});

describe("a slow client's backlog", () => {
  /** A socket that stops taking data until `drain()`: what a stalled reader looks like. */
  function stalledSink() {
    const written: string[] = [];
    let drainListener: (() => void) | undefined;
    let accepting = false;
    const sink: SseSink = {
      write(chunk) {
        written.push(chunk);
        return accepting;
      },
      end() {},
      once(_event, listener) {
        drainListener = listener;
      },
    };
    return {
      sink,
      written,
      drain() {
        accepting = true;
        const l = drainListener;
        drainListener = undefined;
        l?.();
      },
    };
  }

  it("stays under its byte bound however much is published, then says overflow and resumes", () => {
    const s = stalledSink();
    const client = createSseClient(s.sink, { maxQueuedBytes: 1000 });
    client.send("first\n\n"); // written, and the socket pushes back
    for (let i = 0; i < 10_000; i++) {
      client.send(`event: request\ndata: ${"x".repeat(40)}${i}\n\n`);
      expect(client.queuedBytes).toBeLessThanOrEqual(1000);
    }
    expect(s.written).toEqual(["first\n\n"]);
    expect(client.dropped).toBeGreaterThan(9000);
    s.drain();
    expect(s.written[1]).toMatch(/^event: overflow\ndata: \{"dropped":\d+\}\n\n$/);
    // What was queued after the last drop follows, in order, ending with the newest.
    expect(s.written.at(-1)).toContain(`${"x".repeat(40)}9999`);
    expect(client.queuedBytes).toBe(0);
  });

  it("keeps frames in order and drops nothing while the backlog fits", () => {
    const s = stalledSink();
    const client = createSseClient(s.sink, { maxQueuedBytes: 10_000 });
    for (let i = 0; i < 20; i++) client.send(`data: ${i}\n\n`);
    s.drain();
    expect(s.written).toEqual(Array.from({ length: 20 }, (_, i) => `data: ${i}\n\n`));
    expect(client.dropped).toBe(0);
  });

  it("a stalled client does not hold back the others", () => {
    const hub = createEventHub({ maxQueuedBytes: 500 });
    const slow = stalledSink();
    const fast: string[] = [];
    hub.attach(slow.sink);
    hub.attach({
      write: (c) => {
        fast.push(c);
        return true;
      },
      end() {},
      once() {},
    });
    for (let i = 0; i < 1000; i++) hub.publish({ type: "state", data: { at: String(i), replaced: false } });
    expect(fast).toHaveLength(1000);
    expect(slow.written).toHaveLength(1);
    hub.close();
  });
});

describe("control-plane access", () => {
  const host = (url: string) => new URL(url).host;

  it("refuses a non-loopback Host without the admin token, in the contract's error format", async () => {
    const url = await start();
    for (const path of ["/_emulator/events", "/_emulator/health", "/_emulator/ui/", "/_emulator/console/state", "/_emulator/faults", "/_emulator/requests"]) {
      const res = await call(url, path, { host: "evil.example:80" });
      expect(res.status, path).toBe(401);
      expect(JSON.parse(res.body), path).toEqual({ detail: expect.stringContaining("loopback") });
    }
    // A rebinding page that learned an organization id still cannot act for it.
    const org = await json<{ organization: { id: string } }>(`${url}/v1/organization/signup`, "POST", { name: "acme" });
    const asOrg = await call(url, `/_emulator/as/${org.body.organization.id}/v1/instances`, { host: "rebind.example" });
    expect(asOrg.status).toBe(401);
    // The /v1 API itself is not the control plane: any Host reaches it.
    expect((await call(url, "/v1/openapi.json", { host: "evil.example" })).status).toBe(200);
  });

  it("answers loopback names and the configured host, with any port", async () => {
    const url = await start();
    const port = new URL(url).port;
    for (const name of [host(url), `localhost:${port}`, "LOCALHOST", `127.8.9.10:${port}`, `[::1]:${port}`, "[::1]"]) {
      expect((await call(url, "/_emulator/health", { host: name })).status, name).toBe(200);
    }
    for (const name of ["localhost.evil.example", "127.0.0.1.nip.io", "0.0.0.0:80", "[::2]"]) {
      expect((await call(url, "/_emulator/health", { host: name })).status, name).toBe(401);
    }
    expect(isAllowedHost(undefined, "127.0.0.1")).toBe(false);
    expect(isAllowedHost("api.local:8080", "api.local")).toBe(true);
    expect(isAllowedHost("0.0.0.0:8080", "0.0.0.0")).toBe(false);
    expect(isAllowedHost("[fe80::1]:80", "fe80::1")).toBe(true);
  });

  it("with an admin token, any Host with the token passes and none without it", async () => {
    const url = await start({ adminToken: "s3cret-admin" });
    const stream = await events(url, { host: "emulator.example", authorization: "Bearer s3cret-admin" });
    expect(stream.response.statusCode).toBe(200);
    await stream.next((f) => f.event === "hello");
    const refused = await call(url, "/_emulator/events", { host: host(url) });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toEqual({ detail: "The control plane needs the admin token." });
    expect((await call(url, "/_emulator/events", { authorization: "Bearer wrong" })).status).toBe(401);
  });

  it("with an admin token, the console's ?token= sets a cookie that stands in for the bearer", async () => {
    const url = await start({ adminToken: "s3cret-admin" });
    expect((await fetch(`${url}/_emulator/ui/`)).status).toBe(401);
    expect((await fetch(`${url}/_emulator/ui/?token=wrong`, { redirect: "manual" })).status).toBe(401);
    const exchange = await fetch(`${url}/_emulator/ui/instances?token=s3cret-admin`, { redirect: "manual" });
    expect(exchange.status).toBe(303);
    expect(exchange.headers.get("location")).toBe("/_emulator/ui/instances");
    const cookie = exchange.headers.get("set-cookie")!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    const page = await fetch(`${url}/_emulator/ui/instances`, { headers: { cookie: cookie.split(";")[0]! } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
  });
});
