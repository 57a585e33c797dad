/**
 * The validating proxy in front of a second emulator process: a faithful
 * upstream gives an empty report; an upstream that renamed a field, changed
 * a status, dropped an error field and added an unknown stream event gives a
 * report naming exactly those; the client always gets the upstream's bytes;
 * an upstream that cannot be reached is reported as such, not as drift.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createValidatingProxy, PROXY_HEADER, type ValidatingProxy } from "../../emulator/proxy/server.js";
import { DriftReport } from "../../emulator/proxy/drift-report.js";
import { type CliRun, startCli, stopCli } from "../helpers/cli.js";
import { startDriftingUpstream, type DriftingUpstream } from "../helpers/drifting-upstream.js";
import { deadPort, tempDir } from "../helpers/emulator.js";

let upstream: CliRun & { url: string };
beforeAll(async () => {
  upstream = await startCli(["--port", "0", "--in-memory", "--provision-ms", "0"]);
});
afterAll(async () => {
  if (upstream) await stopCli(upstream);
});

interface Seen {
  status: number;
  bytes: Buffer;
}

/** A client session through `base`: what a test suite does to the service, each answer's bytes kept. */
async function session(base: string): Promise<Seen[]> {
  const seen: Seen[] = [];
  const call = async (method: string, path: string, key?: string, body?: unknown): Promise<{ status: number; json: () => unknown }> => {
    const res = await fetch(base + path, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    seen.push({ status: res.status, bytes });
    return { status: res.status, json: () => JSON.parse(bytes.toString("utf8")) as unknown };
  };
  const signup = (await call("POST", "/v1/organization/signup", undefined, { name: "acme" }).then((r) => r.json())) as { api_key: string };
  const key = signup.api_key;
  await call("PATCH", "/v1/organization", key, { model_api_keys: { anthropic: "anthropic-test-0123456789" } });
  const instance = (await call("POST", "/v1/instances", key, { name: "agent" }).then((r) => r.json())) as { id: string };
  await call("GET", `/v1/instances/${instance.id}`, key);
  await call("GET", "/v1/instances", key);
  await call("GET", "/v1/subscription", key);
  await call("GET", "/v1/instances/00000000-0000-4000-8000-000000000000", key);
  await call("POST", "/v1/instances", key, { name: "" });
  await call("POST", `/v1/instances/${instance.id}/responses`, key, { model: "m", input: "hello" });
  await call("POST", `/v1/instances/${instance.id}/responses`, key, { model: "m", input: "hello again", stream: true });
  await call("PUT", `/v1/instances/${instance.id}/files/content`, key, { path: "notes.txt", content: "hi" });
  await call("GET", `/v1/instances/${instance.id}/files/download?path=notes.txt`, key);
  return seen;
}

async function throughProxy(target: string, dir: string): Promise<{ proxy: ValidatingProxy; url: string }> {
  const proxy = createValidatingProxy({ upstream: target, reportJson: join(dir, "drift.json"), reportJunit: join(dir, "drift.xml") });
  return { proxy, url: await proxy.listen(0, "127.0.0.1") };
}

describe("a faithful upstream", () => {
  it("gives an empty report", async () => {
    const dir = tempDir();
    try {
      const { proxy, url } = await throughProxy(upstream.url, dir.path);
      const seen = await session(url);
      expect(seen.map((s) => s.status)).toEqual([201, 200, 201, 200, 200, 200, 404, 422, 200, 200, 204, 200]);
      const report = await proxy.close();
      expect(report.drifts).toEqual([]);
      expect(report.unreachable).toEqual([]);
      expect(report.exchanges).toBe(12);
      expect(report.routes["POST /v1/instances"]).toEqual({ exchanges: 2, drifts: 0 });
      expect(DriftReport.parse(JSON.parse(readFileSync(join(dir.path, "drift.json"), "utf8")))).toEqual(report);
      expect(readFileSync(join(dir.path, "drift.xml"), "utf8")).toContain('failures="0" errors="0"');
    } finally {
      dir.remove();
    }
  });
});

describe("a drifted upstream", () => {
  let standIn: DriftingUpstream;
  afterAll(async () => {
    await standIn?.close();
  });

  it("names each drift and nothing else, while the client gets the upstream's bytes", async () => {
    standIn = await startDriftingUpstream(upstream.url, { renameInstanceName: true, subscriptionStatus: 202, dropErrorDetail: true, unknownStreamEvent: true });
    const dir = tempDir();
    try {
      const { proxy, url } = await throughProxy(standIn.url, dir.path);
      const seen = await session(url);
      expect(seen.map((s) => s.bytes)).toEqual(standIn.sent);
      const report = await proxy.close();
      expect(report.drifts.map(({ route, jsonPath, kind, expected, actual }) => ({ route, jsonPath, kind, expected, actual }))).toEqual([
        { route: "GET /v1/instances/{instance_id}", jsonPath: "$.name", kind: "missing", expected: "string", actual: "absent" },
        { route: "GET /v1/instances/{instance_id}", jsonPath: "$.title", kind: "unknown", expected: "absent", actual: '"agent"' },
        { route: "GET /v1/subscription", jsonPath: "status", kind: "status", expected: "200, 401, 403", actual: "202" },
        {
          route: "GET /v1/instances/{instance_id}",
          jsonPath: "$.detail",
          kind: "missing",
          expected: "string or array of ValidationIssue or object",
          actual: "absent",
        },
        {
          route: "POST /v1/instances/{instance_id}/responses",
          jsonPath: expect.stringMatching(/^events\[\d+\]$/) as unknown as string,
          kind: "unknown_event",
          expected: "a known event type",
          actual: '"response.reasoning.delta"',
        },
      ]);
      expect(report.routes["GET /v1/instances/{instance_id}"]).toEqual({ exchanges: 2, drifts: 3 });
      const junit = readFileSync(join(dir.path, "drift.xml"), "utf8");
      expect(junit).toContain('<testcase classname="contract" name="GET /v1/subscription">');
      expect(junit).toContain("status: status: expected 200, 401, 403, got 202");
    } finally {
      dir.remove();
    }
  });
});

describe("a compressing upstream", () => {
  it("is relayed compressed, and judged and recorded decompressed", async () => {
    const standIn = await startDriftingUpstream(upstream.url, { gzip: true });
    const dir = tempDir();
    try {
      const proxy = createValidatingProxy({ upstream: standIn.url, recordDir: dir.path });
      const url = await proxy.listen(0, "127.0.0.1");
      const seen = await session(url);
      // fetch decompresses, so what the client read is the stand-in's bytes decompressed.
      expect(seen.map((s) => s.bytes)).toEqual(standIn.sent.map((b) => (b.length ? gunzipSync(b) : b)));
      const report = await proxy.close();
      expect(report.drifts).toEqual([]);
      const recording = JSON.parse(readFileSync(join(dir.path, "default.recording.json"), "utf8")) as {
        interactions: { response: { headers: Record<string, string>; body?: unknown; events?: unknown[] } }[];
      };
      expect(recording.interactions[3]!.response.body).toMatchObject({ name: "agent" });
      expect(recording.interactions[3]!.response.headers["content-encoding"]).toBeUndefined();
      expect(recording.interactions[9]!.response.events?.length).toBeGreaterThan(3);
    } finally {
      await standIn.close();
      dir.remove();
    }
  });
});

describe("an upstream that cannot be reached", () => {
  it("is reported as unreachable, not as drift, and the client gets the proxy's own 502", async () => {
    const proxy = createValidatingProxy({ upstream: `http://127.0.0.1:${await deadPort()}` });
    const url = await proxy.listen(0, "127.0.0.1");
    const res = await fetch(`${url}/v1/organization`, { headers: { authorization: "Bearer x" } });
    expect(res.status).toBe(502);
    expect(res.headers.get(PROXY_HEADER)).toBe("upstream-unreachable");
    expect(((await res.json()) as { detail: string }).detail).toMatch(/could not be reached \(ECONNREFUSED\)/);
    const report = await proxy.close();
    expect(report.drifts).toEqual([]);
    expect(report.unreachable).toEqual([{ route: "GET /v1/organization", error: "ECONNREFUSED", count: 1 }]);
  });
});
