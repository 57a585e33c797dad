/**
 * What the kit says before it has anything to check: a server that is not
 * there, a key the server does not take, a scoped key, a usage error. One
 * clear line each, every other check skipped, nothing to clean up.
 */
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { main } from "../../bin/program.js";
import { runConformance } from "../../conformance/run.js";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { throwawayOrg } from "../helpers/conformance.js";

let emulator: Emulator;
let url: string;

beforeAll(async () => {
  emulator = await createEmulator({ inMemory: true, provisionMs: 0 });
  url = await emulator.listen(0, "127.0.0.1");
});
afterAll(async () => {
  await emulator.close();
});

/** A port nothing listens on: taken, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function expectStoppedAtPreflight(run: Awaited<ReturnType<typeof runConformance>>, message: RegExp): void {
  expect(run.results[0]).toMatchObject({ id: "preflight", outcome: "fail", message: expect.stringMatching(message) });
  expect(run.results.slice(1).every((r) => r.outcome === "skip" && r.message === "not run: preflight failed")).toBe(true);
  expect(run.cleanup).toEqual([]);
  expect(run.ok).toBe(false);
}

it("says a server that is not there cannot be reached, and checks nothing else", async () => {
  const run = await runConformance({ baseUrl: `http://127.0.0.1:${await closedPort()}`, key: `svc_org_${"a".repeat(64)}` });
  expectStoppedAtPreflight(run, /the request failed \(fetch failed: .*ECONNREFUSED.*\): the server closed the connection or cannot be reached/);
});

it("says the server does not take the key, without quoting it", async () => {
  const key = `svc_org_${"b".repeat(64)}`;
  const run = await runConformance({ baseUrl: url, key });
  expectStoppedAtPreflight(run, /^the server does not accept the key \(401: ".+"\): pass an organization key/);
  expect(JSON.stringify(run.results)).not.toContain(key);
});

it("says a scoped key is not an organization key", async () => {
  const org = await throwawayOrg(url);
  const auth = { authorization: `Bearer ${org.key}`, "content-type": "application/json" };
  const instance = (await (await fetch(`${url}/v1/instances`, { method: "POST", headers: auth, body: '{"name":"mine"}' })).json()) as { id: string };
  const scoped = (await (
    await fetch(`${url}/v1/keys`, { method: "POST", headers: auth, body: JSON.stringify({ name: "mine", instance_ids: [instance.id], permissions: ["read"] }) })
  ).json()) as { raw_key: string };
  const run = await runConformance({ baseUrl: url, key: scoped.raw_key });
  expectStoppedAtPreflight(run, /^the key is not an organization key, or it expired or was revoked \(403: /);
});

it("refuses a usage error with exit code 2 and the reason", async () => {
  let err = "";
  const io = {
    writeOut: () => {},
    writeErr: (t: string) => {
      err += t;
    },
  };
  expect(await main(["conformance", "--key", "k"], io)).toBe(2);
  expect(err).toContain("required option '--base-url <url>' not specified");
  err = "";
  expect(await main(["conformance", "--base-url", "ftp://example.com", "--key", "k"], io)).toBe(2);
  expect(err).toContain("Expected an http(s) URL.");
  err = "";
  expect(await main(["conformance", "--base-url", url], io)).toBe(2);
  expect(err).toContain("required option '--key <key>' not specified");
});

it("is listed in the command's help, and its own help names every option", async () => {
  let out = "";
  const io = {
    writeOut: (t: string) => {
      out += t;
    },
    writeErr: () => {},
  };
  expect(await main(["--help"], io)).toBe(0);
  expect(out).toMatch(/^ {2}conformance /m);
  out = "";
  expect(await main(["conformance", "--help"], io)).toBe(0);
  for (const flag of [
    "--base-url <url>",
    "--key <key>",
    "--junit <file>",
    "--model <name>",
    "--allow-signup",
    "--timeout-ms <ms>",
    "--provision-timeout-ms <ms>",
    "--cleanup-timeout-ms <ms>",
    "--sweep",
  ]) {
    expect(out).toContain(flag);
  }
  expect(out).toContain("removed at the end, also after a failure or\nSIGINT/SIGTERM");
  expect(out.replace(/\s+/g, " ")).toContain("(env: AGENT_BRIDGE_CONFORMANCE_KEY)");
});
