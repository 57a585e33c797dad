/**
 * A sandbox's request journal exported as HAR 1.2, over the control plane,
 * from the in-process handle and from the remote one (testing/): valid against the HAR 1.2 JSON Schema (the
 * har-schema package, independent of our own zod schema), one entry per
 * journal entry in order, with URL, status and time, bodies redacted
 * as the journal redacts them, and filtered like the journal.
 */
import { createRequire } from "node:module";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { Har } from "../../shared/schemas/har.js";
import { createSandbox } from "../../testing/remote-sandbox.js";

const require = createRequire(import.meta.url);

let emulator: Emulator;
let url: string;

beforeAll(async () => {
  emulator = await createEmulator({ inMemory: true, provisionMs: 0, validateResponses: true });
  url = await emulator.listen(0, "127.0.0.1");
});
afterAll(async () => {
  await emulator.close();
});

/** The HAR 1.2 JSON Schema (draft-06, with the spec's own non-standard keywords, hence not strict). */
function harValidator() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addMetaSchema(require("ajv/dist/refs/json-schema-draft-06.json") as object);
  const schemas = require("har-schema") as Record<string, object>;
  for (const schema of Object.values(schemas)) ajv.addSchema(schema);
  return ajv.getSchema("har.json#")!;
}

const PROVIDER_SECRET = "sk-ant-api03-har-export-secret-0123456789";
const BOT_TOKEN = "123456789:AAHarExportSecretTokenValue01234567";

async function call(key: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A few requests of every kind the journal records: with a secret body, a query, a 404. */
async function traffic(key: string): Promise<string> {
  expect((await call(key, "PATCH", "/v1/organization", { model_api_keys: { anthropic: PROVIDER_SECRET } })).status).toBe(200);
  const created = await call(key, "POST", "/v1/instances", { name: "har" });
  const instance = ((await created.json()) as { id: string }).id;
  expect((await call(key, "GET", `/v1/instances/${instance}`)).status).toBe(200);
  expect((await call(key, "POST", `/v1/instances/${instance}/channels/telegram/connect`, { config: { token: BOT_TOKEN } })).status).toBe(200);
  expect((await call(key, "GET", `/v1/instances/${instance}/files?path=workspace`)).status).toBe(200);
  expect((await call(key, "GET", "/v1/keys/00000000-0000-4000-8000-000000000000")).status).toBe(404);
  return instance;
}

it("exports the journal as valid HAR 1.2, entry by entry, secrets redacted", async () => {
  const sandbox = (await (
    await fetch(`${url}/_emulator/sandboxes`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"har"}' })
  ).json()) as {
    id: string;
    api_key: string;
  };
  const instance = await traffic(sandbox.api_key);

  const res = await fetch(`${url}/_emulator/sandboxes/${sandbox.id}/requests.har`);
  expect(res.status).toBe(200);
  const text = await res.text();
  const har: unknown = JSON.parse(text);
  const validate = harValidator();
  expect(validate(har), JSON.stringify(validate.errors)).toBe(true);
  const parsed = Har.parse(har);

  const journal = (await (await fetch(`${url}/_emulator/sandboxes/${sandbox.id}/requests`)).json()) as {
    requests: { seq: number; at: string; method: string; path: string; status: number; route: string | null; ms: number }[];
  };
  expect(parsed.log.version).toBe("1.2");
  expect(parsed.log.entries.map((e) => [e.request.method, e.request.url, e.response.status, e.startedDateTime, e.time])).toEqual(
    journal.requests.map((r) => [r.method, `${url}${r.path}`, r.status, r.at, r.ms]),
  );
  expect(parsed.log.entries.map((e) => e._route)).toEqual(journal.requests.map((r) => r.route));
  expect(parsed.log.entries.map((e) => e.response.statusText)).toEqual(["OK", "Created", "OK", "OK", "OK", "Not Found"]);

  const listing = parsed.log.entries[4]!;
  // The journal keeps the path without its query string, and so does the archive.
  expect(listing.request.url).toBe(`${url}/v1/instances/${instance}/files`);
  expect(listing.request.queryString).toEqual([]);
  expect(listing._instance_id).toBe(instance);
  expect(listing.request.postData).toBeUndefined();

  // Bodies as the journal keeps them: secrets redacted, never in clear anywhere in the archive.
  expect(text).not.toContain(PROVIDER_SECRET);
  expect(text).not.toContain(BOT_TOKEN);
  expect(text).not.toContain(sandbox.api_key);
  expect(JSON.parse(parsed.log.entries[0]!.request.postData!.text!)).toEqual({ model_api_keys: { anthropic: "<redacted>" } });
  expect(JSON.parse(parsed.log.entries[1]!.request.postData!.text!)).toEqual({ name: "har" });
  expect(parsed.log.comment).toContain("6 of the 6 requests sandbox");
  expect(parsed.log.comment).toContain("keeps no headers and no answer bodies");

  // Filtered like the journal.
  const posts = Har.parse(await (await fetch(`${url}/_emulator/sandboxes/${sandbox.id}/requests.har?method=post`)).json());
  expect(posts.log.entries.map((e) => e.request.url)).toEqual([`${url}/v1/instances`, `${url}/v1/instances/${instance}/channels/telegram/connect`]);
  expect(posts.log.comment).toContain("those that match the filter");
});

it("gives the same archive from the in-process handle and the remote one", async () => {
  const sandbox = await emulator.sandboxes.create({ name: "handle" });
  await traffic(sandbox.apiKey);
  const overHttp = await (await fetch(`${url}/_emulator/sandboxes/${sandbox.id}/requests.har`)).json();
  expect(sandbox.har()).toEqual(overHttp);
  const remote = await createSandbox({ url, name: "remote" });
  await traffic(remote.apiKey);
  expect((await remote.har({ method: "PATCH" })).log.entries.map((e) => e.request.url)).toEqual([`${url}/v1/organization`]);
  expect(sandbox.har({ status: 404 }).log.entries.map((e) => e.response.status)).toEqual([404]);
  const validate = harValidator();
  expect(validate(sandbox.har())).toBe(true);
});

it("answers 404 for an unknown sandbox and 422 for a bad filter", async () => {
  expect((await fetch(`${url}/_emulator/sandboxes/sbx_unknown/requests.har`)).status).toBe(404);
  const sandbox = await emulator.sandboxes.create();
  const res = await fetch(`${url}/_emulator/sandboxes/${sandbox.id}/requests.har?status=abc`);
  expect(res.status).toBe(422);
});
