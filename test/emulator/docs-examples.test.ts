/**
 * The sequences docs/emulator.md shows with curl ("A first session with curl",
 * "Snapshots and reset", "Fault rules"), run against a real emulator, checking
 * the answers the text claims: the first session, and a fault that fires
 * before a snapshot, a reset and a restore.
 */
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replyText, startEmulator, type TestEmulator } from "../helpers/emulator.js";

let t: TestEmulator;
beforeAll(async () => {
  t = await startEmulator({ provisionMs: 1500 });
});
afterAll(async () => {
  await t?.close();
});

describe("the curl sequences of docs/emulator.md", () => {
  let key = "";
  let id = "";
  const auth = () => ({ authorization: `Bearer ${key}` });
  const send = (path: string, input: string) => request(t.app).post(path).set(auth()).send({ model: "claude", input });

  it("a first session: signup, a provider key, an instance, a message in session alice", async () => {
    const signup = await request(t.app).post("/v1/organization/signup").send({ name: "acme" });
    expect(signup.status).toBe(201);
    key = signup.body.api_key as string;
    expect(
      (
        await request(t.app)
          .patch("/v1/organization")
          .set(auth())
          .send({ model_api_keys: { anthropic: "sk-placeholder" } })
      ).status,
    ).toBe(200);
    const created = await request(t.app).post("/v1/instances").set(auth()).send({ name: "first" });
    expect(created.status).toBe(201);
    id = created.body.id as string;
    t.clock.advance(1500); // the guide's `sleep 2`: provisioning takes 1.5 s by default
    const reply = await send(`/v1/instances/${id}/session/alice/responses`, "hello");
    expect(reply.status).toBe(200);
    expect(replyText(reply.body)).toBe("You said: hello");
  });

  it("a gateway fault fails the next message with 502, once; reset forgets everything; the snapshot brings it back", async () => {
    const fault = await request(t.app).post("/_emulator/faults").send({ target: "gateway", instance_id: id, status: 503, times: 1 });
    expect(fault.status).toBe(201);
    expect(fault.body).toMatchObject({ remaining: 1, hits: 0 });

    const failed = await send(`/v1/instances/${id}/responses`, "hello");
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ detail: { error: "The instance gateway answered HTTP 503." } });
    expect((await request(t.app).get("/_emulator/faults")).body).toEqual([]); // retired after one hit

    const before = await request(t.app).get("/_emulator/snapshot");
    expect(before.status).toBe(200);
    expect((await request(t.app).post("/_emulator/reset")).status).toBe(204);
    const gone = await request(t.app).get("/v1/organization").set(auth());
    expect(gone.status).toBe(401);
    expect(gone.body).toEqual({ detail: "Invalid API key." });

    expect((await request(t.app).put("/_emulator/snapshot").send(before.body)).status).toBe(204);
    const recalled = await send(`/v1/instances/${id}/session/alice/responses`, "!recall");
    expect(recalled.status).toBe(200);
    expect(replyText(recalled.body)).toBe("hello");
  });

  it("an api fault answers its status on the next call under its path, then retires", async () => {
    const path = `/v1/instances/${id}/files`;
    expect((await request(t.app).post("/_emulator/faults").send({ target: "api", path, status: 503, times: 1 })).status).toBe(201);
    const failed = await request(t.app).get(path).set(auth());
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({ detail: "Injected fault (HTTP 503)." });
    expect((await request(t.app).get(path).set(auth())).status).toBe(200);
  });
});
