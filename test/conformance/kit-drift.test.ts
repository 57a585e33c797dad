/**
 * A stand-in in front of the emulator that breaks the contract in four ways
 * (a renamed field, a changed status, an error body without `detail`, an
 * unknown stream event): exactly the checks that meet them fail, each message
 * naming the route and what differs; every other check passes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { formatJunit } from "../../conformance/report/junit.js";
import { runConformance } from "../../conformance/run.js";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { throwawayOrg } from "../helpers/conformance.js";

let emulator: Emulator;
let upstream: string;
let standIn: Server;
let standInUrl: string;

/** What the stand-in does to an answer: the body as text, a status, headers. */
function breakAnswer(method: string, path: string, hasKey: boolean, status: number, text: string): { status: number; text: string } {
  if (method === "GET" && path === "/v1/organization" && status === 200) return { status, text: text.replace('"instance_count"', '"instances_count"') };
  if (method === "GET" && path === "/v1/organization" && !hasKey) return { status, text: JSON.stringify({ error: "unauthorized" }) };
  if (method === "DELETE" && path.startsWith("/v1/keys/") && status === 204) return { status: 200, text: "{}" };
  if (text.startsWith("event:") || text.startsWith("data:")) {
    // One event the contract does not know, before the terminal one.
    const at = text.lastIndexOf("event: response.completed");
    const extra = `event: response.conformance_extra\ndata: ${JSON.stringify({ type: "response.conformance_extra" })}\n\n`;
    return { status, text: at < 0 ? text : text.slice(0, at) + extra + text.slice(at) };
  }
  return { status, text };
}

beforeAll(async () => {
  emulator = await createEmulator({ inMemory: true, provisionMs: 0, validateResponses: true });
  upstream = await emulator.listen(0, "127.0.0.1");
  standIn = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers[k] = v;
    const body = Buffer.concat(chunks);
    const answer = await fetch(`${upstream}${req.url}`, { method: req.method ?? "GET", headers, ...(body.length ? { body } : {}) });
    const path = (req.url ?? "/").split("?")[0]!;
    const out: Record<string, string> = {};
    answer.headers.forEach((v, k) => {
      if (!["content-length", "transfer-encoding", "connection"].includes(k)) out[k] = v;
    });
    const type = answer.headers.get("content-type");
    if (type && !/json|event-stream/.test(type)) {
      res.writeHead(answer.status, out).end(Buffer.from(await answer.arrayBuffer()));
      return;
    }
    const broken = breakAnswer(req.method ?? "GET", path, req.headers.authorization !== undefined, answer.status, await answer.text());
    if (broken.status !== answer.status && !type) out["content-type"] = "application/json";
    res.writeHead(broken.status, out).end(broken.text);
  });
  await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", resolve));
  standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
});
afterAll(async () => {
  standIn.closeAllConnections();
  await new Promise<void>((resolve) => standIn.close(() => resolve()));
  await emulator.close();
});

it("fails exactly the checks that meet a broken answer, naming route, place and what came back", async () => {
  const org = await throwawayOrg(upstream);
  const run = await runConformance({ baseUrl: standInUrl, key: org.key });
  const failed = Object.fromEntries(run.results.filter((r) => r.outcome === "fail").map((r) => [r.id, r.message ?? ""]));

  // The preflight meets the renamed field too: a drift alone does not stop the run.
  expect(Object.keys(failed).sort()).toEqual(["auth.missing-key", "keys.revoke", "messaging.stream", "organization.get", "organization.rename", "preflight"]);
  expect(failed["organization.get"]).toContain("GET /v1/organization 200 $.instance_count");
  expect(failed["organization.get"]).toMatch(/instances_count/);
  expect(failed["auth.missing-key"]).toContain("GET /v1/organization answered 401 without a sentence in detail");
  expect(failed["auth.missing-key"]).toContain("GET /v1/organization 401 $.detail");
  expect(failed["keys.revoke"]).toContain("DELETE /v1/keys/");
  expect(failed["keys.revoke"]).toContain("answered 200, expected 204");
  expect(failed["keys.revoke"]).toContain("DELETE /v1/keys/{key_id} 200 status: expected");
  expect(failed["messaging.stream"]).toContain("response.conformance_extra");
  expect(failed["messaging.stream"]).toMatch(/events\[\d+\]: expected a known event type, got "response.conformance_extra"/);

  // The JUnit file carries each failure, drifts as such, with every drift in its body.
  const xml = formatJunit(run.results, run.cleanup, { baseUrl: standInUrl, timestamp: new Date(0).toISOString() });
  expect(xml).toMatch(/<testsuites name="agent-bridge conformance" tests="\d+" failures="6" skipped="1"/);
  expect(xml).toMatch(
    /<testcase classname="conformance.organization" name="organization.get: [^"]*"[^>]*>\s*<failure message="[^"]*" type="drift">[^<]*GET \/v1\/organization 200 \$\.instance_count \(missing\)/,
  );
  expect(xml).toMatch(/name="keys.revoke: [^"]*"[^>]*>\s*<failure message="DELETE \/v1\/keys\/[^"]* answered 200, expected 204: \{\}; the answer drifted/);
  expect(xml).not.toContain(org.key);

  // The rest passed (signup is only checked on request), and the cleanup still left nothing.
  expect(run.results.filter((r) => r.outcome === "skip").map((r) => r.id)).toEqual(["signup.create"]);
  expect(run.cleanup.every((c) => c.ok)).toBe(true);
});
