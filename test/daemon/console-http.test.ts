/**
 * The operator's console over plain HTTP: what it refuses and to whom. With
 * `ops.token` every console path wants it (bearer, or the cookie a page load
 * with `?token=` sets); without one it answers loopback callers naming a
 * loopback host only; a change sent by a page of another origin is refused
 * either way; `/healthz` and `/metrics` stay as they were; and a daemon asked
 * to serve the console beyond loopback without a token does not start.
 */
import { writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it, onTestFinished } from "vitest";
import { createDaemon } from "../../daemon/daemon.js";
import { daemonConfigSchema } from "../../daemon/config/schema.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { runAgentBridge } from "../helpers/cli.js";
import { openSse } from "../helpers/sse-client.js";
import { waitUntil } from "../helpers/wait.js";
import { OpsChats, OpsConsoleError, OpsOverview, OpsPairing } from "../../shared/schemas/ops-console.js";

const TOKEN = "ops-console-token-5d1e2a9f";

async function daemonWithOps(ops: Record<string, unknown>) {
  const service = await startServiceFixture("console-http-");
  const base = service.configFor({ type: "terminal" });
  const config = daemonConfigSchema.parse({
    service: base.service,
    dataDir: base.dataDir,
    logLevel: "silent",
    ops: { port: 0, ...ops },
    routes: [{ instance: service.instanceId }],
  });
  const lines: string[] = [];
  const daemon = createDaemon({ config, adapters: [], logger: pino({ level: "info" }, { write: (l: string) => void lines.push(l) }) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { url: daemon.opsUrl!, lines, service };
}

/** One raw request (fetch forbids setting Host, Origin and Sec-Fetch-Site). */
function call(url: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request(`${url}${path}`, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

describe("the console with ops.token", () => {
  it("refuses no token and a wrong one, on the page and the API, and takes the right one as a bearer", async () => {
    const { url, lines } = await daemonWithOps({ token: TOKEN });
    for (const path of ["/ui/", "/ui/overview", "/ui/api/overview", "/ui/api/pairing", "/ui/api/events", "/ui/vendor/preact.mjs"]) {
      const none = await call(url, path);
      expect(none.status, path).toBe(401);
      expect(JSON.parse(none.body).detail).toContain("needs the ops token");
      const wrong = await call(url, path, { headers: { authorization: "Bearer not-the-token-at-all" } });
      expect(wrong.status, path).toBe(401);
      expect(wrong.body).not.toContain(TOKEN);
    }
    const refusedChange = await call(url, "/ui/api/pairing/approve", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"channel":"x","code":"y"}',
    });
    expect(refusedChange.status).toBe(401);
    const right = await call(url, "/ui/api/overview", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(right.status).toBe(200);
    expect(JSON.parse(right.body)).toMatchObject({ channels: [], turnsPerMinute: 0 });
    // The refusals are logged, never with what was sent.
    expect(lines.some((l) => l.includes("console request refused"))).toBe(true);
    expect(lines.join("")).not.toContain("not-the-token-at-all");
  });

  it("turns ?token= on a page load into an HttpOnly cookie and takes the token out of the address", async () => {
    const { url } = await daemonWithOps({ token: TOKEN });
    const wrong = await call(url, "/ui/chats?token=wrong-token-wrong-token");
    expect(wrong.status).toBe(401);
    expect(wrong.headers["set-cookie"]).toBeUndefined();
    const exchanged = await call(url, `/ui/chats?token=${TOKEN}&x=1`);
    expect(exchanged.status).toBe(303);
    expect(exchanged.headers.location).toBe("/ui/chats?x=1");
    const cookie = String(exchanged.headers["set-cookie"]);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const page = await call(url, "/ui/chats", { headers: { cookie: cookie.split(";")[0]! } });
    expect(page.status).toBe(200);
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.body).toContain("/ui/assets/app.js");
  });

  it("refuses a change sent by a page of another origin even with the token", async () => {
    const { url } = await daemonWithOps({ token: TOKEN });
    const res = await call(url, "/ui/api/pairing/revoke", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "sec-fetch-site": "cross-site" },
      body: '{"channel":"x","user":"y"}',
    });
    expect(res.status).toBe(403);
  });

  it("answers a body that is not JSON with 400 and a bad one with 422, changing nothing", async () => {
    const { url } = await daemonWithOps({ token: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    expect((await call(url, "/ui/api/pairing/approve", { method: "POST", headers: auth, body: "{" })).status).toBe(400);
    expect((await call(url, "/ui/api/pairing/approve", { method: "POST", headers: auth, body: '{"channel":1}' })).status).toBe(422);
  });
});

describe("the console without a token", () => {
  it("answers loopback callers naming a loopback host, and refuses a page that names another host (DNS rebinding)", async () => {
    const { url } = await daemonWithOps({});
    expect((await call(url, "/ui/api/overview")).status).toBe(200);
    const rebound = await call(url, "/ui/api/overview", { headers: { host: "attacker.example:80" } });
    expect(rebound.status).toBe(401);
    expect(JSON.parse(rebound.body).detail).toContain("loopback host");
  });

  it("on the daemon: the 17th stream is refused with 503 and a sentence in the contract's {detail}", async () => {
    const { url } = await daemonWithOps({});
    const readers = await Promise.all(Array.from({ length: 16 }, () => openSse(`${url}/ui/api/events`)));
    onTestFinished(() => {
      for (const r of readers) r.close();
    });
    await Promise.all(readers.map((r) => r.next((f) => f.event === "hello")));
    const refused = await fetch(`${url}/ui/api/events`);
    expect(refused.status).toBe(503);
    expect(OpsConsoleError.parse(await refused.json()).detail).toContain("Too many console event streams");
    readers[0]!.close();
    const again = await waitUntil(async () => {
      const r = await openSse(`${url}/ui/api/events`);
      if (r.response.statusCode === 200) return r;
      r.close();
      return undefined;
    }, "a stream once one closed");
    again.close();
  });

  it("routes through one table: answers read by the shared schemas, a known path with another method 405 naming the one it takes, an unknown one 404, all as {detail}", async () => {
    const { url } = await daemonWithOps({});
    const overview = OpsOverview.parse(JSON.parse((await call(url, "/ui/api/overview")).body));
    expect(overview.history).toMatchObject({ turnsPerMinute: [], latencyMs: [] });
    OpsChats.parse(JSON.parse((await call(url, "/ui/api/chats")).body));
    OpsPairing.parse(JSON.parse((await call(url, "/ui/api/pairing")).body));
    const wrong = await call(url, "/ui/api/pairing/revoke");
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe("POST");
    expect(OpsConsoleError.parse(JSON.parse(wrong.body)).detail).toContain("POST");
    const unknown = await call(url, "/ui/api/nothing-here");
    expect(unknown.status).toBe(404);
    expect(OpsConsoleError.parse(JSON.parse(unknown.body)).detail).toBe("No such console route.");
    const badEscape = await call(url, "/ui/api/chats/%E0%A4%A");
    expect(badEscape.status).toBe(400);
    expect(OpsConsoleError.parse(JSON.parse(badEscape.body)).detail).toContain("not well encoded");
  });

  it("is off with ops.console false, while /healthz and /metrics answer", async () => {
    const { url } = await daemonWithOps({ console: false });
    expect((await call(url, "/ui/api/overview")).status).toBe(404);
    expect((await call(url, "/metrics")).status).toBe(200);
    expect((await call(url, "/healthz")).body).toContain("healthy");
  });
});

it("a daemon asked to serve the console beyond this machine without ops.token does not start, and says how to fix it", async () => {
  const service = await startServiceFixture("console-http-");
  const file = join(service.dataDir, "..", `${service.dataDir.split("/").at(-1)}-open.json`);
  writeFileSync(
    file,
    JSON.stringify({
      service: { baseUrl: service.baseUrl, apiKey: service.configFor({ type: "terminal" }).service.apiKey },
      dataDir: service.dataDir,
      ops: { host: "0.0.0.0", port: 0 },
      routes: [{ instance: service.instanceId }],
    }),
  );
  const run = runAgentBridge(["run", "--config", file]);
  expect(await run.exited).not.toBe(0);
  expect(run.stdout() + run.stderr()).toContain("ops.token: the console on a host beyond this machine needs ops.token");
});
