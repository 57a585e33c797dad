/**
 * The console's data endpoints and its act-as-organization mount, through the
 * public HTTP surface (supertest on the emulator's app).
 */
import request from "supertest";
import { beforeEach, describe, expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { appendWindow, windowSize } from "../../emulator/console/ui/window.js";
import { redactJson, redactText } from "../../emulator/events/redact.js";
import { providerKey, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;
let org: TestOrg;
beforeEach(async () => {
  t = forThisTest(await startEmulator());
  org = await signupOrg(t.app);
});

const send = (instanceId: string, session: string, input: string, auth = org.auth) =>
  request(t.app)
    .post(`/v1/instances/${instanceId}/session/${encodeURIComponent(session)}/responses`)
    .set(auth)
    .send({ model: "m", input });

describe("console data", () => {
  it("lists organizations with key views and instances, never a secret", async () => {
    const instance = await runningInstance(t, org);
    const minted = await request(t.app)
      .post("/v1/keys")
      .set(org.auth)
      .send({ name: "bridge", instance_ids: [instance.id], permissions: ["read", "interact"] });
    expect(minted.status).toBe(201);
    await request(t.app)
      .get(`/v1/instances/${instance.id}`)
      .set({ Authorization: `Bearer ${minted.body.raw_key}` });

    const res = await request(t.app).get("/_emulator/console/state");
    expect(res.status).toBe(200);
    expect(res.body.instances).toEqual([expect.objectContaining({ id: instance.id, status: "running" })]);
    const [o] = res.body.organizations;
    expect(o).toMatchObject({ id: org.organization.id, subscription_tier: org.organization.subscription_tier, model_providers: ["anthropic"] });
    expect(o.keys).toEqual([
      expect.objectContaining({
        name: "bridge",
        is_active: true,
        last_used_at: expect.any(String),
        instances: [{ instance_id: instance.id, permissions: ["read", "interact"] }],
      }),
    ]);
    const text = JSON.stringify(res.body);
    for (const secret of [org.apiKey, minted.body.raw_key, providerKey("anthropic")]) expect(text).not.toContain(secret);
  });

  it("gives each session's chain of turns, oldest first, bounded by limit, and the chain ending at a response", async () => {
    const instance = await runningInstance(t, org);
    const ids: string[] = [];
    for (const input of ["one", "two", "three"]) ids.push((await send(instance.id, "s/1", input)).body.id);
    await send(instance.id, "other", "elsewhere");

    const sessions = await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions`);
    expect(sessions.body.map((s: { session: string; turns: number }) => [s.session, s.turns]).sort()).toEqual([
      ["other", 1],
      ["s/1", 3],
    ]);

    const chain = await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions/${encodeURIComponent("s/1")}?limit=2`);
    expect(chain.status).toBe(200);
    expect(chain.body.total).toBe(3);
    expect(chain.body.turns.map((x: { id: string }) => x.id)).toEqual(ids.slice(1));
    expect(chain.body.turns[0]).toMatchObject({ input_text: "two", previous_response_id: ids[0], usage: { total_tokens: expect.any(Number) } });

    const fromMiddle = await request(t.app).get(`/_emulator/console/responses/${ids[1]}`);
    expect(fromMiddle.body).toMatchObject({ instance_id: instance.id, session: "s/1", total: 2 });
    expect(fromMiddle.body.turns.map((x: { id: string }) => x.id)).toEqual(ids.slice(0, 2));

    expect((await request(t.app).get("/_emulator/console/responses/resp_nope")).status).toBe(404);
    expect((await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions/x?limit=0`)).status).toBe(422);
  });

  it("names sessions by their id, not by the header value the gateway was sent (non-ASCII, %, line breaks)", async () => {
    const instance = await runningInstance(t, org);
    const names = ["Zoë's chat", "100% sure", "two\nlines", "%C3%BC"];
    const heads: string[] = [];
    for (const name of names) heads.push((await send(instance.id, name, `in ${name}`)).body.id);
    const sessions = await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions`);
    expect(sessions.body.map((s: { session: string }) => s.session).sort()).toEqual([...names].sort());
    for (const [i, name] of names.entries()) {
      const turns = await request(t.app).get(`/_emulator/console/instances/${instance.id}/sessions/${encodeURIComponent(name)}`);
      expect(turns.body).toMatchObject({ session: name, head_id: heads[i], total: 1 });
      expect(turns.body.turns[0]).toMatchObject({ session: name, input_text: `in ${name}` });
      expect((await request(t.app).get(`/_emulator/console/responses/${heads[i]}`)).body.session).toBe(name);
    }
  });

  it("shows a pending WhatsApp pairing's QR as a PNG until it is scanned", async () => {
    const instance = await runningInstance(t, org);
    await request(t.app).post(`/v1/instances/${instance.id}/channels/whatsapp/connect`).set(org.auth).send({ config: {} }).expect(200);
    const before = await request(t.app).get(`/_emulator/console/instances/${instance.id}/channels`);
    const wa = before.body.find((c: { channel: string }) => c.channel === "whatsapp");
    expect(wa).toMatchObject({ enabled: true, connected: false, awaiting_scan: true });
    expect(wa.qr_png).toMatch(/^data:image\/png;base64,/);
    await request(t.app).post(`/_emulator/instances/${instance.id}/channels/whatsapp/scan`).expect(200);
    const after = await request(t.app).get(`/_emulator/console/instances/${instance.id}/channels`);
    expect(after.body.find((c: { channel: string }) => c.channel === "whatsapp")).toMatchObject({ connected: true, awaiting_scan: false, qr_png: null });
  });

  it("acts for an organization under /_emulator/as/{org}: the same /v1 routes, with control-plane access", async () => {
    const instance = await runningInstance(t, org);
    const base = `/_emulator/as/${org.organization.id}/v1/instances/${instance.id}`;
    expect((await request(t.app).post(`${base}/stop`)).body.status).toBe("stopped");
    expect((await request(t.app).get(`/v1/instances/${instance.id}`).set(org.auth)).body.status).toBe("stopped");
    expect((await request(t.app).get(`/_emulator/as/not-an-org/v1/instances`)).status).toBe(404);
    // Another organization's instance stays invisible to it.
    const other = await signupOrg(t.app, { name: "other" });
    expect((await request(t.app).get(`/_emulator/as/${other.organization.id}/v1/instances/${instance.id}`)).status).toBe(404);
  });

  it("keeps request and response bodies for the log, secrets redacted, and leaves out the console's own calls", async () => {
    await request(t.app).get("/_emulator/console/state");
    await request(t.app).get("/_emulator/faults").set("x-emulator-console", "1");
    const list = await request(t.app).get("/_emulator/console/requests");
    const paths = list.body.map((l: { path: string }) => l.path);
    expect(paths).toContain("/v1/organization/signup");
    expect(paths).not.toContain("/_emulator/console/state");
    expect(paths).not.toContain("/_emulator/faults");
    const signup = list.body.find((l: { path: string }) => l.path === "/v1/organization/signup");
    const detail = await request(t.app).get(`/_emulator/console/requests/${signup.id}`);
    expect(detail.body.request.body).toEqual({ name: "acme" });
    expect(detail.body.response.body.api_key).toBe("<redacted>");
    expect(JSON.stringify(detail.body)).not.toContain(org.apiKey);
    expect((await request(t.app).get("/_emulator/console/requests/999999")).status).toBe(404);
  });

  it("does not keep a large request body (the log's memory stays bounded)", async () => {
    const instance = await runningInstance(t, org);
    const big = "x".repeat(100_000);
    await request(t.app).put(`/v1/instances/${instance.id}/files/content`).set(org.auth).send({ path: "big.txt", content: big }).expect(204);
    const list = await request(t.app).get("/_emulator/console/requests");
    const line = list.body.find((l: { method: string }) => l.method === "PUT");
    const detail = await request(t.app).get(`/_emulator/console/requests/${line.id}`);
    expect(detail.body.request).toMatchObject({ truncated: true, body: expect.stringMatching(/bytes, not kept/) });
    const read = await request(t.app).get(`/v1/instances/${instance.id}/files/content?path=big.txt`).set(org.auth).expect(200);
    const readLine = (await request(t.app).get("/_emulator/console/requests")).body.find(
      (l: { path: string; method: string }) => l.method === "GET" && l.path.endsWith("/files/content"),
    );
    const readDetail = await request(t.app).get(`/_emulator/console/requests/${readLine.id}`);
    expect(read.body.content).toHaveLength(100_000);
    expect(readDetail.body.response.truncated).toBe(true);
    expect(String(readDetail.body.response.body).length).toBeLessThanOrEqual(16 * 1024);
  });
});

describe("redaction", () => {
  it("redacts by field name (everything under it) and raw keys or bot tokens anywhere", () => {
    const key = `svc_org_${"a".repeat(64)}`;
    expect(
      redactJson({
        config: { bot_token: "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi", homeserver: "https://m.example" },
        model_api_keys: { anthropic: "sk-1", openai: "" },
        env: { GITHUB: "ghp_x" },
        note: `my key is ${key}`,
        session: "chat-1",
      }),
    ).toEqual({
      config: { bot_token: "<redacted>", homeserver: "https://m.example" },
      model_api_keys: { anthropic: "<redacted>", openai: "" },
      env: { GITHUB: "<redacted>" },
      note: "my key is <redacted>",
      session: "chat-1",
    });
    // A key cut by the 16 KiB capture limit still goes.
    expect(redactText(`{"api_key":"svc_sk_0123abcd`)).toBe(`{"api_key":"<redacted>`);
  });
});

describe("bounded windows", () => {
  it("keeps the newest max rows whatever arrives, without duplicates", () => {
    let list: { id: number }[] = [];
    for (let i = 0; i < 10_000; i++) {
      list = appendWindow(list, [{ id: i }], 500);
      expect(list.length).toBeLessThanOrEqual(500);
    }
    expect(list[0]!.id).toBe(9500);
    expect(list.at(-1)!.id).toBe(9999);
    // A reload after a reconnect overlaps what is held: nothing is shown twice.
    list = appendWindow(list, [{ id: 9998 }, { id: 9999 }, { id: 10_000 }], 500);
    expect(list.map((x) => x.id).slice(-3)).toEqual([9998, 9999, 10_000]);
    expect(new Set(list.map((x) => x.id)).size).toBe(list.length);
    expect(() => appendWindow([], [], 0)).toThrow(RangeError);
  });

  it("reads the window size from ?window=N, within bounds", () => {
    expect(windowSize("?window=5", 500)).toBe(5);
    expect(windowSize("", 500)).toBe(500);
    expect(windowSize("?window=0", 500)).toBe(500);
    expect(windowSize("?window=abc", 500)).toBe(500);
  });
});
