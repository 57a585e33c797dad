/**
 * A hostile look at the control plane a browser can reach: cross-site state
 * changes (CSRF), Host forms a rebinding page could send, path traversal in
 * the console's static files, secrets in the request log and events, and bad
 * query parameters on the console's data routes. Real HTTP on a listening
 * emulator where the exact bytes on the wire matter (raw paths, no Host).
 */
import { request as httpRequest } from "node:http";
import request from "supertest";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { runningInstance, signupOrg, snapshot, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;
let org: TestOrg;
beforeEach(async () => {
  t = forThisTest(await startEmulator());
  org = await signupOrg(t.app);
});

/** One raw request: the path goes on the wire exactly as given; `host: null` sends no Host header. */
function raw(url: string, path: string, options: { method?: string; host?: string | null; headers?: Record<string, string> } = {}) {
  const { hostname, port } = new URL(url);
  const headers: Record<string, string> = { ...options.headers };
  if (options.host) headers.host = options.host;
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, method: options.method ?? "GET", headers, setHost: options.host === undefined }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("cross-site state changes (CSRF)", () => {
  it("a page of another site cannot reset, act for an organization, or add a fault; the state is unchanged", async () => {
    const instance = await runningInstance(t, org);
    const before = await snapshot(t.app);
    const crossSite = [
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" }, // another port of localhost: same site, not same origin
      { origin: "http://evil.example" },
      { origin: "null" },
    ];
    for (const headers of crossSite) {
      const reset = await request(t.app).post("/_emulator/reset").set(headers);
      expect(reset.status, JSON.stringify(headers)).toBe(403);
      expect(reset.body).toEqual({ detail: expect.stringContaining("another origin") });
      const stop = await request(t.app).post(`/_emulator/as/${org.organization.id}/v1/instances/${instance.id}/stop`).set(headers);
      expect(stop.status).toBe(403);
      const fault = await request(t.app).post("/_emulator/faults").set(headers).set("content-type", "text/plain").send('{"target":"gateway"}');
      expect(fault.status).toBe(403);
    }
    expect(await snapshot(t.app)).toEqual(before);
    expect((await request(t.app).get("/_emulator/faults")).body).toEqual([]);
  });

  it("the console's own calls (same origin) and clients that are not browsers (curl, supertest) still work", async () => {
    const url = await t.emulator.listen(0, "127.0.0.1");
    const host = new URL(url).host;
    const sameOrigin = await raw(url, "/_emulator/reset", { method: "POST", headers: { origin: url, "sec-fetch-site": "same-origin" } });
    expect(sameOrigin.status).toBe(204);
    const originOnly = await raw(url, "/_emulator/faults", { method: "DELETE", headers: { origin: `http://${host}` } });
    expect(originOnly.status).toBe(204);
    expect((await raw(url, "/_emulator/reset", { method: "POST" })).status).toBe(204);
    // Reads are not state changes: a cross-site GET is still only stopped by the Host rule and CORS.
    expect((await raw(url, "/_emulator/health", { headers: { "sec-fetch-site": "cross-site" } })).status).toBe(200);
  });

  it("with an admin token, the cookie does not carry a cross-site (or same-site, other port) POST", async () => {
    await t.close();
    t = forThisTest(await startEmulator({ adminToken: "s3cret-admin" }));
    const url = await t.emulator.listen(0, "127.0.0.1");
    const cookie = `emulator_admin=s3cret-admin`;
    const refused = await raw(url, "/_emulator/reset", { method: "POST", headers: { cookie, "sec-fetch-site": "same-site", origin: "http://localhost:3000" } });
    expect(refused.status).toBe(403);
    expect((await raw(url, "/_emulator/reset", { method: "POST", headers: { cookie, "sec-fetch-site": "same-origin" } })).status).toBe(204);
  });
});

describe("the ?token= cookie exchange", () => {
  it("redirects to the same view without the token, keeping its other parameters, and sets a strict HttpOnly cookie", async () => {
    await t.close();
    t = forThisTest(await startEmulator({ adminToken: "s3cret-admin" }));
    const res = await request(t.app).get("/_emulator/ui/instances/abc/files?path=workspace%2Fdocs&token=s3cret-admin&window=50");
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe("/_emulator/ui/instances/abc/files?path=workspace%2Fdocs&window=50");
    const cookie = String(res.headers["set-cookie"]);
    expect(cookie).toMatch(/^emulator_admin=[^;]+; Path=\/_emulator; HttpOnly; SameSite=Strict$/);
  });
});

describe("Host header forms", () => {
  it("refuses a request without Host, and names that only look like loopback", async () => {
    const url = await t.emulator.listen(0, "127.0.0.1");
    // Node's server itself answers 400 to HTTP/1.1 without Host; either way, refused.
    expect([400, 401]).toContain((await raw(url, "/_emulator/health", { host: null })).status);
    for (const host of [
      "127.0.0.1.evil.example",
      "localhost.evil",
      "[::1].evil.example",
      "[::ffff:7f00:1]",
      "127.1",
      "localhost.",
      "evil.example",
      "localhost:80@evil.example",
      "localhost:abc",
      "[::1]x",
    ]) {
      const res = await raw(url, "/_emulator/health", { host });
      expect(res.status, host).toBe(401);
      expect(JSON.parse(res.body), host).toEqual({ detail: expect.stringContaining("Host") });
    }
  });

  it("an absolute-form request target does not stand in for the Host header", async () => {
    const url = await t.emulator.listen(0, "127.0.0.1");
    const res = await raw(url, `${url}/_emulator/health`, { host: "evil.example" });
    expect(res.status).toBe(401);
    // The target's authority comes before Host (RFC 9112): a loopback Host does not vouch for it.
    const host = new URL(url).host;
    expect((await raw(url, "http://evil.example/_emulator/health", { host })).status).toBe(401);
    expect((await raw(url, `http://${host}/_emulator/health`, { host })).status).toBe(200);
  });
});

describe("the console page's headers", () => {
  it("a strict CSP: own scripts only, no inline or eval, no plugins, no framing, HTML sinks locked by Trusted Types", async () => {
    for (const path of ["/_emulator/ui/", "/_emulator/ui/assets/app.js", "/_emulator/ui/vendor/preact.mjs"]) {
      const res = await request(t.app).get(path);
      expect(res.status, path).toBe(200);
      const csp = String(res.headers["content-security-policy"]);
      const directives = new Map(
        csp.split(";").map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name!, values.join(" ")];
        }),
      );
      expect(directives.get("script-src")).toBe("'self'");
      expect(directives.get("object-src")).toBe("'none'");
      expect(directives.get("frame-ancestors")).toBe("'none'");
      expect(directives.get("base-uri")).toBe("'none'");
      expect(directives.get("require-trusted-types-for")).toBe("'script'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["referrer-policy"]).toBe("no-referrer");
    }
  });
});

describe("the console's static files", () => {
  it("serves nothing outside its own folder and the three vendor modules, however the path is written", async () => {
    const url = await t.emulator.listen(0, "127.0.0.1");
    const attempts = [
      "/_emulator/ui/../../package.json",
      "/_emulator/ui/assets/../../../../package.json",
      "/_emulator/ui/assets/%2e%2e/%2e%2e/%2e%2e/%2e%2e/package.json",
      "/_emulator/ui/assets/..%2f..%2f..%2f..%2fpackage.json",
      "/_emulator/ui/assets/%2e%2e%5c%2e%2e%5cdata.ts",
      "/_emulator/ui/assets/../data.ts",
      "/_emulator/ui/assets/%2e%2e/routes.ts",
      "/_emulator/ui/assets/..%252froutes.ts",
      "/_emulator/ui/vendor/..%2f..%2f..%2fpackage.json",
      "/_emulator/ui/vendor/preact",
      "/_emulator/ui/vendor/..%2fnode_modules%2fexpress%2fpackage.json",
      "/_emulator/ui/vendor/constructor",
      "/_emulator/ui/vendor/__proto__",
      "/_emulator/ui/assets/%00app.js",
      "/_emulator/ui/assets/.hidden",
    ];
    for (const path of attempts) {
      const res = await raw(url, path);
      // Either the app's HTML shell (paths outside assets/) or an error: never a file's source.
      expect(res.body, path).not.toMatch(/"dependencies"|import express|mountConsole|export function overview/);
      if (res.status === 200) expect(res.body, path).toContain('<div id="app">');
    }
    expect((await raw(url, "/_emulator/ui/vendor/preact.mjs")).status).toBe(200);
    expect((await raw(url, "/_emulator/ui/assets/views/../app.js")).status).toBe(200);
  });
});

describe("the console's data routes under bad query parameters", () => {
  it("answer 422 in the contract's format for a limit or request id out of range or not a number", async () => {
    const instance = await runningInstance(t, org);
    const turn = await request(t.app).post(`/v1/instances/${instance.id}/session/s/responses`).set(org.auth).send({ model: "m", input: "hi" });
    const bad = ["-1", "0", "abc", "1001", "99999999999999999999", "1.5", ""];
    for (const limit of bad) {
      for (const path of [`/_emulator/console/instances/${instance.id}/sessions/s`, `/_emulator/console/responses/${turn.body.id}`]) {
        const res = await request(t.app).get(path).query({ limit });
        expect(res.status, `${path}?limit=${limit}`).toBe(422);
        expect(res.body.detail[0]).toMatchObject({ loc: ["query", "limit"], msg: expect.any(String), type: expect.any(String) });
      }
    }
    expect((await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions/s?limit=1000`)).status).toBe(200);
    for (const id of ["abc", "-1", "0", "1.5", "1e400"]) {
      const res = await request(t.app).get(`/_emulator/console/requests/${id}`);
      expect(res.status, id).toBe(422);
      expect(res.body.detail[0].loc).toEqual(["path", "request_id"]);
    }
    expect((await request(t.app).get("/_emulator/console/requests/999999")).status).toBe(404);
  });
});

describe("secrets in the request log, the journal and the events stream", () => {
  it("a raw key in a path, or a secret under any key-like field of a skill's config, never shows", async () => {
    const instance = await runningInstance(t, org);
    const events: string[] = [];
    const sink = { write: (chunk: string) => (events.push(chunk), true), end: () => {}, once: () => undefined };
    const detach = t.emulator.events.attach(sink);
    const rawKey = `svc_sk_${"ab".repeat(32)}`;
    await request(t.app).get(`/v1/keys/${rawKey}`).set(org.auth);
    await request(t.app).get(`/v1/instances/${instance.id}/files?path=x&api_key=${rawKey}`).set(org.auth);
    const secrets = ["sk_live_stripe_0123456789", "whsec_signing_0123456789", "dsn-private-0123456789"];
    await request(t.app)
      .patch(`/v1/instances/${instance.id}/skills/weather`)
      .set(org.auth)
      .send({ config: { stripe_key: secrets[0], signingKey: secrets[1], auth: { dsn: secrets[2] } } });
    await vi.waitFor(() => expect(events.join("")).toContain("/skills/weather"));
    detach();

    const lines = (await request(t.app).get("/_emulator/console/requests")).body as { id: number }[];
    const details = await Promise.all(lines.map(async (l) => JSON.stringify((await request(t.app).get(`/_emulator/console/requests/${l.id}`)).body)));
    const journal = JSON.stringify((await request(t.app).get("/_emulator/requests")).body);
    for (const [where, text] of [
      ["request log", JSON.stringify(lines) + details.join("")],
      ["journal", journal],
      ["events", events.join("")],
    ] as const) {
      for (const secret of [rawKey, ...secrets]) expect(text, `${where}: ${secret}`).not.toContain(secret);
    }
    expect(journal).toContain("/v1/keys/<redacted>");
  });

  it("an API client cannot hide its requests from the console by sending the console's own header", async () => {
    const before = (await request(t.app).get("/_emulator/console/requests")).body as { path: string }[];
    expect(before.map((l) => l.path)).not.toContain("/v1/subscription");
    const hidden = await request(t.app).get("/v1/subscription").set(org.auth).set("x-emulator-console", "1");
    expect(hidden.status).toBe(200);
    const lines = (await request(t.app).get("/_emulator/console/requests")).body as { path: string }[];
    expect(lines.map((l) => l.path)).toContain("/v1/subscription");
    // On the control plane it still marks the console's own calls.
    await request(t.app).get("/_emulator/faults").set("x-emulator-console", "1");
    const after = (await request(t.app).get("/_emulator/console/requests")).body as { path: string }[];
    expect(after.map((l) => l.path)).not.toContain("/_emulator/faults");
  });
});

describe("reset and snapshot import while a console listens", () => {
  it("a state event says when the whole state was replaced, so views load again", async () => {
    const frames: string[] = [];
    const detach = t.emulator.events.attach({ write: (chunk: string) => (frames.push(chunk), true), end: () => {}, once: () => undefined });
    const states = () => frames.filter((f) => f.includes("event: state")).map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as { replaced: boolean });
    await signupOrg(t.app, { name: "second" });
    await vi.waitFor(() => expect(states().length).toBeGreaterThan(0));
    expect(states().every((s) => s.replaced === false)).toBe(true);
    const saved = await snapshot(t.app);
    await request(t.app).post("/_emulator/reset").expect(204);
    await vi.waitFor(() => expect(states().at(-1)).toMatchObject({ replaced: true }));
    const count = states().length;
    await request(t.app)
      .put("/_emulator/snapshot")
      .send(saved as object)
      .expect(204);
    await vi.waitFor(() => expect(states().length).toBe(count + 1));
    expect(states().at(-1)).toMatchObject({ replaced: true });
    detach();
  });
});
