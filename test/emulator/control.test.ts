/**
 * The control plane: gateway fault rules (status, reset, timeout, latency,
 * probability with a seed, times, per instance) make the next responses fail
 * as configured and then stop; an api rule hits a files route; a snapshot
 * taken before a reset restores the same state, files included.
 */
import { existsSync } from "node:fs";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createCountedClock } from "../helpers/counted-clock.js";
import { replyText, runningInstance, signupOrg, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const fault = async (t: TestEmulator, body: Record<string, unknown>) => {
  const res = await request(t.app).post("/_emulator/faults").send(body);
  expect(res.status).toBe(201);
  return res.body as { id: string; remaining: number | null; hits: number };
};
const say = (t: TestEmulator, org: TestOrg, instanceId: string, input: string, session?: string) =>
  request(t.app)
    .post(session ? `/v1/instances/${instanceId}/session/${session}/responses` : `/v1/instances/${instanceId}/responses`)
    .set(org.auth)
    .send({ model: "m", input });

describe("gateway fault rules", () => {
  let t: TestEmulator;
  let org: TestOrg;
  let id: string;
  const clock = createCountedClock();
  beforeAll(async () => {
    // The default gateway timeout (2 min): a slow machine must not turn these calls into 502s.
    t = await startEmulator({ clock });
    org = await signupOrg(t.app, { tier: "lobster" });
    id = (await runningInstance(t, org)).id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it("status 5xx: the next response is a 502 naming it, then the gateway answers again", async () => {
    await fault(t, { target: "gateway", status: 503, times: 1 });
    const failed = await say(t, org, id, "one");
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ detail: { error: "The instance gateway answered HTTP 503." } });
    const ok = await say(t, org, id, "two");
    expect(ok.status).toBe(200);
    expect(replyText(ok.body)).toBe("You said: two");
  });

  it("status 4xx is passed through with the gateway's body", async () => {
    await fault(t, { target: "gateway", status: 429, times: 1 });
    const failed = await say(t, org, id, "x");
    expect(failed.status).toBe(429);
    expect(failed.body.error).toMatchObject({ code: "injected_fault" });
    expect((await say(t, org, id, "y")).status).toBe(200);
  });

  it("times: fails exactly that many times, counting hits, then the rule retires", async () => {
    const rule = await fault(t, { target: "gateway", status: 500, times: 3 });
    expect(rule).toMatchObject({ remaining: 3, hits: 0 });
    expect((await say(t, org, id, "a")).status).toBe(502);
    expect((await request(t.app).get(`/_emulator/faults/${rule.id}`)).body).toMatchObject({ remaining: 2, hits: 1 });
    expect((await say(t, org, id, "b")).status).toBe(502);
    expect((await say(t, org, id, "c")).status).toBe(502);
    expect((await request(t.app).get(`/_emulator/faults/${rule.id}`)).status).toBe(404);
    expect((await say(t, org, id, "d")).status).toBe(200);
  });

  it("reset: the connection is cut, a 502; the next call works", async () => {
    await fault(t, { target: "gateway", error: "reset", times: 1 });
    const failed = await say(t, org, id, "cut");
    expect(failed.status).toBe(502);
    expect(failed.body.detail.error).toMatch(/^The instance gateway (could not be reached|broke the exchange)/);
    expect((await say(t, org, id, "whole")).status).toBe(200);
  });

  it("timeout: no answer within gatewayTimeoutMs is a 502 'timed out'; the next call works", async () => {
    // Its own emulator: the timeout is on the real clock (undici's), so only this test waits 300 ms.
    const short = await startEmulator({ gatewayTimeoutMs: 300 });
    try {
      const o = await signupOrg(short.app);
      const i = (await runningInstance(short, o)).id;
      await fault(short, { target: "gateway", error: "timeout", times: 1 });
      const failed = await say(short, o, i, "hang");
      expect(failed.status).toBe(502);
      expect(failed.body.detail.error).toMatch(/timed out/);
      expect((await say(short, o, i, "prompt")).status).toBe(200);
    } finally {
      await short.close();
    }
  });

  it("latency: the reply waits for the emulator's clock to pass it", async () => {
    await fault(t, { target: "gateway", latency_ms: 5000, times: 1 });
    let done = false;
    const pending = say(t, org, id, "slow").then((res) => {
      done = true;
      return res;
    });
    // The gateway takes the request, then sleeps 5000 ms on the manual clock: wait for that sleep.
    await vi.waitFor(() => expect(clock.delays()).toContain(5000), { timeout: 10_000, interval: 5 });
    expect(done).toBe(false);
    t.clock.advance(5000);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(replyText(res.body)).toBe("You said: slow");
  });

  it("instance_id: only that instance's calls fail", async () => {
    const other = (await runningInstance(t, org, { name: "other" })).id;
    await fault(t, { target: "gateway", instance_id: other, status: 503 });
    expect((await say(t, org, id, "mine")).status).toBe(200);
    expect((await say(t, org, other, "theirs")).status).toBe(502);
    expect((await say(t, org, other, "theirs again")).status).toBe(502);
    await request(t.app).delete("/_emulator/faults").expect(204);
    expect((await request(t.app).get("/_emulator/faults")).body).toEqual([]);
    expect((await say(t, org, other, "healed")).status).toBe(200);
  });

  it("an api rule on a path prefix fails a files route once", async () => {
    await fault(t, { target: "api", path: `/v1/instances/${id}/files`, status: 503, times: 1 });
    const failed = await request(t.app).get(`/v1/instances/${id}/files`).set(org.auth);
    expect(failed.status).toBe(503);
    expect(failed.body.detail).toBe("Injected fault (HTTP 503).");
    expect((await request(t.app).get(`/v1/instances/${id}/files`).set(org.auth)).status).toBe(200);
  });
});

describe("probability with a seed", () => {
  /** Outcomes of 24 calls under a 50% rule, in a fresh emulator with this seed. */
  async function pattern(seed: string): Promise<string> {
    const t = await startEmulator({ seed });
    try {
      const org = await signupOrg(t.app);
      const id = (await runningInstance(t, org)).id;
      await fault(t, { target: "gateway", status: 500, probability: 0.5 });
      let out = "";
      for (let i = 0; i < 24; i++) out += (await say(t, org, id, `n${i}`)).status === 200 ? "." : "x";
      return out;
    } finally {
      await t.close();
    }
  }

  it("fails some calls and not others, the same ones for the same seed", async () => {
    const first = await pattern("fault-seed");
    expect(first).toMatch(/x/);
    expect(first).toMatch(/\./);
    expect(await pattern("fault-seed")).toBe(first);
  });
});

describe("snapshot and reset", () => {
  let t: TestEmulator;
  let org: TestOrg;
  let id: string;
  beforeAll(async () => {
    t = await startEmulator();
    org = await signupOrg(t.app, { tier: "lobster" });
    id = (await runningInstance(t, org)).id;
  });
  afterAll(async () => {
    await t?.close();
  });

  const api = (method: "get" | "post" | "put" | "patch" | "delete", suffix: string) => request(t.app)[method](`/v1/instances/${id}${suffix}`).set(org.auth);

  /** Everything a client can see of the instance: record, every file with its bytes, skills, channels. */
  async function visible() {
    const files: Record<string, unknown> = {};
    const walk = async (path: string) => {
      const listing = await api("get", "/files").query({ path });
      expect(listing.status).toBe(200);
      for (const entry of listing.body.entries as { path: string; is_dir: boolean }[]) {
        if (entry.is_dir) {
          files[entry.path] = entry;
          await walk(entry.path);
        } else {
          const bytes = await api("get", "/files/download")
            .query({ path: entry.path })
            .buffer(true)
            .parse((r, done) => {
              const chunks: Buffer[] = [];
              r.on("data", (c: Buffer) => chunks.push(c));
              r.on("end", () => done(null, Buffer.concat(chunks)));
            });
          files[entry.path] = { ...entry, bytes: (bytes.body as Buffer).toString("base64") };
        }
      }
    };
    await walk(".");
    return {
      instance: (await api("get", "")).body,
      files,
      skills: (await api("get", "/skills")).body,
      channels: (await api("get", "/channels")).body,
      telegram: (await api("get", "/channels/telegram/status")).body,
      whatsapp: (await api("get", "/channels/whatsapp/status")).body,
    };
  }

  it("a snapshot taken before a reset restores the same state, files included", async () => {
    await api("put", "/files/content").send({ path: "workspace/notes/today.md", content: "# Today\n" }).expect(204);
    await api("post", "/files/upload")
      .field("path", "workspace/bin/blob.bin")
      .attach("file", Buffer.from([0, 1, 2, 250, 255]), "blob.bin")
      .expect(204);
    await api("post", "/files/mkdir").query({ path: "workspace/empty/dir" }).expect(204);
    await api("post", "/skills/install")
      .send({ slug: "weather", env: { WEATHER_API_KEY: "w-secret" } })
      .expect(200);
    await api("post", "/channels/telegram/connect")
      .send({ config: { token: TELEGRAM_BOT_TOKEN } })
      .expect(200);
    await api("post", "/channels/telegram/pair").send({ code: "PAIR1234" }).expect(200);
    await api("post", "/channels/whatsapp/connect").send({ config: {} }).expect(200);
    expect(replyText((await say(t, org, id, "remember this", "alice")).body)).toBe("You said: remember this");

    const taken = await request(t.app).get("/_emulator/snapshot");
    expect(taken.status).toBe(200);
    expect(Object.keys(taken.body.workspaces)).toEqual([id]);
    const before = await visible();
    expect(before.files["workspace/bin/blob.bin"]).toMatchObject({ size: 5, bytes: Buffer.from([0, 1, 2, 250, 255]).toString("base64") });

    await request(t.app).post("/_emulator/reset").expect(204);
    expect((await api("get", "")).status).toBe(401);
    expect(existsSync(t.emulator.env.workspaces.rootOf(id))).toBe(false);
    const empty = await request(t.app).get("/_emulator/snapshot");
    expect(empty.body.instances).toEqual({});
    expect(empty.body.workspaces).toEqual({});

    await request(t.app).put("/_emulator/snapshot").send(taken.body).expect(204);
    const again = await request(t.app).get("/_emulator/snapshot");
    expect(again.body).toEqual(taken.body);
    expect(await visible()).toEqual(before);
    // The gateway's conversations and the pending QR came back too.
    expect(replyText((await say(t, org, id, "!recall", "alice")).body)).toBe("remember this");
    expect((await request(t.app).post(`/_emulator/instances/${id}/channels/whatsapp/scan`)).body.connected).toBe(true);
  });

  it("refuses a snapshot whose tree leaves the instance root (422), keeping the current state", async () => {
    const taken = (await request(t.app).get("/_emulator/snapshot")).body as { workspaces: Record<string, unknown[]> };
    const bad = { ...taken, workspaces: { [id]: [{ path: "../escape.txt", type: "file", mode: 0o644, mtime: "2026-01-01T00:00:00.000Z", data: "" }] } };
    const res = await request(t.app).put("/_emulator/snapshot").send(bad);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc.slice(0, 3)).toEqual(["body", "workspaces", id]);
    const twice = {
      ...taken,
      workspaces: {
        [id]: [
          { path: "a", type: "file", mode: 0o644, mtime: "2026-01-01T00:00:00.000Z", data: "" },
          { path: "a/b", type: "dir", mode: 0o755, mtime: "2026-01-01T00:00:00.000Z" },
        ],
      },
    };
    expect((await request(t.app).put("/_emulator/snapshot").send(twice)).status).toBe(422);
    expect((await api("get", "/files/content").query({ path: "workspace/notes/today.md" })).body.content).toBe("# Today\n");
    expect(existsSync(`${t.emulator.env.workspaces.root}/escape.txt`)).toBe(false);
  });

  it("a snapshot without workspaces (an older export) leaves the files as they are", async () => {
    const { workspaces: _, ...state } = (await request(t.app).get("/_emulator/snapshot")).body as Record<string, unknown>;
    await api("put", "/files/content").send({ path: "workspace/after.txt", content: "kept" }).expect(204);
    await request(t.app).put("/_emulator/snapshot").send(state).expect(204);
    expect((await api("get", "/files/content").query({ path: "workspace/after.txt" })).body.content).toBe("kept");
  });
});
