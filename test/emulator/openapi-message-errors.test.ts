/**
 * The OpenAPI document describes the errors the message routes really
 * answer: each answer below is checked against the schema the document gives
 * for its route and status (what a schema fuzzer does), the gateway's own
 * errors in the OpenAI shape included.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

type Json = Record<string, unknown>;

let t: TestEmulator;
let doc: Json;
let org: TestOrg;
let instanceId: string;
let conforms: (path: string, status: number, body: unknown) => string | null;

beforeAll(async () => {
  t = await startEmulator({
    modelScript: {
      rules: [
        { name: "limited", match: { input: "busy" }, answer: { error: { status: 429, retry_after: 2 } } },
        { name: "too long", match: { input: "huge" }, answer: { error: { status: 400, code: "context_length_exceeded", param: "input" } } },
      ],
    },
  });
  doc = (await request(t.app).get("/v1/openapi.json")).body as Json;
  org = await signupOrg(t.app);
  instanceId = (await runningInstance(t, org)).id;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...doc, $id: "doc" });
  conforms = (path, status, body) => {
    const operation = (doc.paths as Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>)[path]!.post!;
    const answer = operation.responses[String(status)];
    if (!answer) return `the document lists no ${status} for ${path}`;
    const ref = answer.$ref!.replace(/^#/, "");
    const validate = ajv.getSchema(`doc#${ref}/content/application~1json/schema`)!;
    return validate(body) ? null : ajv.errorsText(validate.errors);
  };
});
afterAll(async () => {
  await t?.close();
});

const ROUTES = [
  ["/v1/instances/{instance_id}/responses", (id: string) => `/v1/instances/${id}/responses`],
  ["/v1/instances/{instance_id}/session/{session_id}/responses", (id: string) => `/v1/instances/${id}/session/s/responses`],
] as const;

describe.each(ROUTES)("%s", (documented, pathOf) => {
  const send = (body: Json) =>
    request(t.app)
      .post(pathOf(instanceId))
      .set(org.auth)
      .send({ model: "m", ...body });

  it("documents the gateway's 400 (previous_response_not_found, context_length_exceeded) as it answers them", async () => {
    const unknown = await send({ input: "x", previous_response_id: `resp_${"0".repeat(32)}` });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe("previous_response_not_found");
    expect(conforms(documented, 400, unknown.body)).toBeNull();
    const long = await send({ input: "huge" });
    expect(long.status).toBe(400);
    expect(conforms(documented, 400, long.body)).toBeNull();
  });

  it("documents a 429 with its retry-after", async () => {
    const limited = await send({ input: "busy" });
    expect(limited.status).toBe(429);
    expect(limited.headers["retry-after"]).toBe("2");
    expect(limited.headers["retry-after-ms"]).toBe("2000");
    expect(conforms(documented, 429, limited.body)).toBeNull();
  });

  it("still documents the API's own 400 and 422 in the {detail} shape", async () => {
    const notJson = await request(t.app).post(pathOf(instanceId)).set(org.auth).set("content-type", "application/json").send("{");
    expect(notJson.status).toBe(400);
    expect(conforms(documented, 400, notJson.body)).toBeNull();
    const invalid = await send({ input: 5 });
    expect(invalid.status).toBe(422);
    expect(conforms(documented, 422, invalid.body)).toBeNull();
    // And a {detail} body is not taken for the gateway's.
    expect(conforms(documented, 429, notJson.body)).not.toBeNull();
  });
});
