/**
 * Fixtures: a starting state a person writes, loaded at start
 * (`createEmulator({ fixtures })`, `--fixtures`) and into new sandboxes
 * (over HTTP and in process). The API then answers as if it had all been
 * made through it: chosen keys work, earlier turns chain, files are there.
 * A fixture with a problem is refused whole, every problem named by its
 * place; a chosen key never appears in clear on disk.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { describe, expect, it, onTestFinished } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import type { FixtureInput } from "../../emulator/seed/index.js";
import { bearer, tempDir } from "../helpers/emulator.js";
import { startCli, stopCli } from "../helpers/cli.js";

const FIXTURE: FixtureInput = {
  organizations: [
    {
      name: "acme",
      tier: "crab",
      provider_keys: { anthropic: "sk-ant-fixture" },
      api_key: "svc_org_test_acme",
      keys: [{ name: "bot", key: "svc_sk_test_acme_bot", grants: { support: ["interact", "read"] } }],
      instances: [
        {
          name: "support",
          sessions: {
            alice: [
              { user: "my order is 42", assistant: "Noted." },
              { user: "it is late", assistant: "Sorry.", id: "resp_00000000000000000000000000000abc" },
            ],
          },
          files: { "workspace/notes.md": "# Notes\n", "workspace/logo.bin": { base64: Buffer.from([1, 2, 3]).toString("base64") } },
          skills: { weather: { env: { WEATHER_API_KEY: "weather-secret-value" } } },
          channels: { telegram: { config: { token: "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" } } },
        },
        { name: "archive", status: "stopped" },
      ],
    },
    { name: "beta", provider_keys: { openai: "sk-openai-fixture" }, api_key: "svc_org_test_beta", instances: [{ name: "solo", model_provider: "openai" }] },
  ],
};

async function start(options: Parameters<typeof createEmulator>[0]): Promise<Emulator> {
  const emulator = await createEmulator({ provisionMs: 0, validateResponses: true, ...options });
  onTestFinished(() => emulator.close());
  return emulator;
}

const get = (e: Emulator, path: string, key: string) => request(e.app).get(path).set(bearer(key));
const ask = (e: Emulator, instance: string, session: string, input: string, key = "svc_org_test_acme", extra: Record<string, unknown> = {}) =>
  request(e.app)
    .post(`/v1/instances/${instance}/session/${session}/responses`)
    .set(bearer(key))
    .send({ model: "claude", input, ...extra });
const text = (body: { output: { content?: { text?: string }[] }[] }) =>
  body.output
    .flatMap((o) => o.content ?? [])
    .map((c) => c.text)
    .join("");

describe("fixtures at start", () => {
  it("answers as if everything had been made through the API", async () => {
    const dir = tempDir("fixtures-");
    onTestFinished(dir.remove);
    const e = await start({ dataDir: dir.path, fixtures: FIXTURE });
    const org = await get(e, "/v1/organization", "svc_org_test_acme").expect(200);
    expect(org.body).toMatchObject({ name: "acme", subscription_tier: "crab", instance_count: 2, model_providers: ["anthropic"] });
    const instances = await get(e, "/v1/instances", "svc_org_test_acme").expect(200);
    const byName = Object.fromEntries((instances.body as { name: string; id: string; status: string }[]).map((i) => [i.name, i]));
    expect(byName.support?.status).toBe("running");
    expect(byName.archive?.status).toBe("stopped");
    const support = byName.support!.id;

    // The session's earlier turns are its context, and a fixture's response id continues its chain.
    expect(text((await ask(e, support, "alice", "!recall").expect(200)).body)).toBe("my order is 42\nit is late");
    const fromId = await ask(e, support, "bob", "!recall", "svc_org_test_acme", { previous_response_id: "resp_00000000000000000000000000000abc" }).expect(200);
    expect(text(fromId.body)).toBe("my order is 42\nit is late");

    // Files, and a scoped key with its grants only.
    const notes = await get(e, `/v1/instances/${support}/files/content?path=workspace/notes.md`, "svc_org_test_acme").expect(200);
    expect(notes.body.content).toBe("# Notes\n");
    await get(e, `/v1/instances/${support}`, "svc_sk_test_acme_bot").expect(200);
    await get(e, `/v1/instances/${byName.archive!.id}`, "svc_sk_test_acme_bot").expect(403);
    // Skills and channels as the install and connect routes leave them: secrets only as fingerprints.
    const skills = await get(e, `/v1/instances/${support}/skills`, "svc_org_test_acme").expect(200);
    expect((skills.body as { name: string; ready: boolean }[]).filter((k) => k.name === "weather")).toMatchObject([{ ready: true }]);
    const channel = await get(e, `/v1/instances/${support}/channels/telegram/status`, "svc_org_test_acme").expect(200);
    expect(channel.body).toMatchObject({ connected: true });
    const runtime = await get(e, `/v1/instances/${support}/files/content?path=runtime.json`, "svc_org_test_acme").expect(200);
    expect(JSON.parse(runtime.body.content as string)).toMatchObject({
      skills: { entries: { weather: { enabled: true } } },
      channels: { telegram: { enabled: true } },
    });
    expect(runtime.body.content).not.toContain("weather-secret-value");
    expect(runtime.body.content).not.toContain("AAAAAAAAAAAAAAAA");
    await get(e, `/v1/instances/${support}/files/content?path=skills/weather/SKILL.md`, "svc_org_test_acme").expect(200);
    // Another organization's key sees only its own.
    const beta = await get(e, "/v1/instances", "svc_org_test_beta").expect(200);
    expect((beta.body as { name: string }[]).map((i) => i.name)).toEqual(["solo"]);

    await e.close();
    const onDisk = readdirSync(dir.path, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".json") || f.endsWith(".jsonl"))
      .map((f) => readFileSync(join(dir.path, f), "utf8"))
      .join("\n");
    expect(onDisk).toContain("acme");
    expect(onDisk).not.toContain("svc_org_test_acme");
    expect(onDisk).not.toContain("svc_sk_test_acme_bot");
    expect(onDisk).not.toContain("sk-ant-fixture");
    expect(onDisk).not.toContain("weather-secret-value");
    expect(onDisk).not.toContain("AAAAAAAAAAAAAAAA");
    // A restart on the same directory keeps the state and does not load the fixture again.
    const again = await start({ dataDir: dir.path, fixtures: FIXTURE });
    const orgs = Object.values(again.store.data.organizations).map((o) => o.name);
    expect(orgs.sort()).toEqual(["acme", "beta"]);
  });

  it("refuses a fixture with problems whole, naming each place", async () => {
    const bad = {
      organizations: [
        {
          name: "acme",
          api_key: "svc_org_acme",
          tier: "shrimp",
          provider_keys: { anthropic: "k" },
          keys: [{ name: "bot", key: "svc_sk_test_bot", grants: { nowhere: ["read"] } }],
          instances: [
            { name: "a", skills: { teleport: {} }, channels: { telegram: { config: { token: "nope" } } } },
            { name: "b", model_provider: "openai", colour: "red" },
          ],
        },
      ],
    };
    const error = await start({ fixtures: bad }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain("$.organizations[0].api_key: Must be svc_org_test_");
    expect(error?.message).toContain("$.organizations[0].instances[1].colour: Unknown field 'colour'");
    const refs = await start({
      fixtures: {
        organizations: [{ ...bad.organizations[0]!, api_key: "svc_org_test_acme", instances: [{ name: "a" }, { name: "b", model_provider: "openai" }] }],
      },
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    const refused = await start({
      fixtures: { organizations: [{ name: "x", provider_keys: { anthropic: "k" }, instances: bad.organizations[0]!.instances.slice(0, 1) }] },
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).toContain("$.organizations[0].instances[0].skills.teleport: Unknown skill");
    expect(refused?.message).toContain("$.organizations[0].instances[0].channels.telegram.config: Invalid Telegram token");
    expect(refs?.message.split("\n").slice(1).sort()).toEqual([
      "$.organizations[0].instances: More instances than the shrimp plan allows (1)",
      "$.organizations[0].instances[1].model_provider: The organization has no provider key for 'openai'",
      "$.organizations[0].keys[0].grants.nowhere: No instance of this organization has this name",
    ]);
  });

  it("repeats its ids under the same seed", async () => {
    const ids = async () => {
      const e = await start({ seed: 7, fixtures: FIXTURE });
      return Object.keys(e.store.data.instances).sort();
    };
    expect(await ids()).toEqual(await ids());
  });

  it("loads from a file with comments through the command line", async () => {
    const dir = tempDir("fixtures-cli-");
    onTestFinished(dir.remove);
    const file = join(dir.path, "fixture.jsonc");
    writeFileSync(file, `// a starting state\n${JSON.stringify(FIXTURE, null, 2)}`);
    const cli = await startCli(["--port", "0", "--in-memory", "--provision-ms", "0", "--fixtures", file]);
    try {
      const url = cli.url;
      const res = await fetch(`${url}/v1/organization`, { headers: bearer("svc_org_test_beta") });
      expect(((await res.json()) as { name: string }).name).toBe("beta");
    } finally {
      await stopCli(cli, "SIGTERM");
    }
  });
});

describe("fixtures into sandboxes", () => {
  it("over HTTP: each sandbox gets its own, a taken key or a problem is refused with its place, removal takes it away", async () => {
    const e = await start({});
    const one = await request(e.app).post("/_emulator/sandboxes").send({ name: "one", fixtures: FIXTURE }).expect(201);
    expect(one.body.fixture.organizations.map((o: { name: string }) => o.name)).toEqual(["acme", "beta"]);
    expect(one.body.fixture.organizations[0].instances[0].sessions.alice[1]).toBe("resp_00000000000000000000000000000abc");
    // The fixture's organizations belong to the sandbox: its journal gets their requests.
    await get(e, "/v1/organization", "svc_org_test_acme").expect(200);
    expect((await request(e.app).get(`/_emulator/sandboxes/${one.body.id}/requests?route=getOrganization`)).body.count).toBe(1);

    const taken = await request(e.app).post("/_emulator/sandboxes").send({ fixtures: FIXTURE }).expect(422);
    expect(taken.body.detail.map((d: { loc: unknown[] }) => d.loc)).toContainEqual(["body", "fixtures", "organizations", 0, "api_key"]);
    expect(JSON.stringify(taken.body)).not.toContain("svc_org_test_acme");
    const invalid = await request(e.app)
      .post("/_emulator/sandboxes")
      .send({ fixtures: { organizations: [{ name: "x", tier: "whale" }] } })
      .expect(422);
    expect(invalid.body.detail[0].loc).toEqual(["body", "fixtures", "organizations", 0, "tier"]);
    // A response id a fixture names is one response across the emulator: the same fixture again (keys changed) is refused for it.
    const sameIds = JSON.parse(
      JSON.stringify(FIXTURE).replaceAll("svc_org_test_", "svc_org_test_x").replaceAll("svc_sk_test_", "svc_sk_test_x"),
    ) as typeof FIXTURE;
    const idTaken = await request(e.app).post("/_emulator/sandboxes").send({ fixtures: sameIds }).expect(422);
    expect(idTaken.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ["body", "fixtures", "organizations", 0, "instances", 0, "sessions", "alice", 1, "id"],
    ]);
    // Refused fixtures made no sandbox.
    expect(Object.keys(e.store.data.sandboxes)).toEqual([one.body.id]);

    await request(e.app).delete(`/_emulator/sandboxes/${one.body.id}`).expect(204);
    await get(e, "/v1/organization", "svc_org_test_acme").expect(401);
    // Its keys are free again.
    await request(e.app).post("/_emulator/sandboxes").send({ fixtures: FIXTURE }).expect(201);
  });

  it("in process, with the names a test finds its ids by", async () => {
    const e = await start({});
    const sandbox = await e.sandboxes.create({
      fixtures: { organizations: [{ name: "solo", provider_keys: { anthropic: "k" }, api_key: "svc_org_test_solo", instances: [{ name: "bot" }] }] },
    });
    const bot = sandbox.fixture?.organizations[0]?.instances[0];
    expect(bot?.name).toBe("bot");
    expect((await ask(e, bot!.id, "main", "hello", "svc_org_test_solo").expect(200)).status).toBe(200);
    expect(sandbox.count({ route: "createSessionResponse" })).toBe(1);
    await expect(e.sandboxes.create({ fixtures: { organizations: [] } })).rejects.toThrow("$.organizations: ");
  });
});
