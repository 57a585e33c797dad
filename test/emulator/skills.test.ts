/**
 * Skills from the bundled registry: list (and eligible_only), detail,
 * install (with and without the env a skill needs), update, uninstall, the
 * files an install writes, and env values never kept in clear.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SKILL_REGISTRY } from "../../emulator/skills/registry.js";
import { forceState, runningInstance, signupOrg, snapshot, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";

let t: TestEmulator;
let org: TestOrg;

beforeAll(async () => {
  t = await startEmulator();
  org = await signupOrg(t.app, { tier: "lobster" });
});
afterAll(async () => {
  await t?.close();
});

const SECRET = "weather-secret-value-7f3a9c";

async function fresh() {
  const instance = await runningInstance(t, org, { name: "skills" });
  const id = instance.id;
  const base = `/v1/instances/${id}/skills`;
  return {
    id,
    root: t.emulator.env.workspaces.rootOf(id),
    list: (query?: Record<string, string>) =>
      request(t.app)
        .get(base)
        .query(query ?? {})
        .set(org.auth),
    detail: (name: string) => request(t.app).get(`${base}/${name}`).set(org.auth),
    install: (body: Record<string, unknown>) => request(t.app).post(`${base}/install`).set(org.auth).send(body),
    update: (name: string, body: Record<string, unknown>) => request(t.app).patch(`${base}/${name}`).set(org.auth).send(body),
    uninstall: (name: string) => request(t.app).delete(`${base}/${name}`).set(org.auth),
    /** runtime.json as the files API shows it. */
    runtime: async () => {
      const res = await request(t.app).get(`/v1/instances/${id}/files/content`).query({ path: "runtime.json" }).set(org.auth);
      expect(res.status).toBe(200);
      return JSON.parse(res.body.content as string) as { skills: { entries: Record<string, unknown> } };
    },
  };
}

/** Every file under `dir`, concatenated: a secret must be in none of them. */
function allText(dir: string): string {
  let out = "";
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    out += statSync(full).isDirectory() ? allText(full) : readFileSync(full, "utf8");
  }
  return out;
}

describe("the registry", () => {
  it("lists every registry skill, installed or not, none ready on a new instance", async () => {
    const s = await fresh();
    const res = await s.list();
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThanOrEqual(8);
    expect(res.body.map((i: { name: string }) => i.name)).toEqual(SKILL_REGISTRY.map((k) => k.slug));
    for (const item of res.body) expect(item).toEqual({ name: item.name, description: expect.stringMatching(/\S/), source: "registry", ready: false });
    expect((await s.list({ eligible_only: "true" })).body).toEqual([]);
    expect(SKILL_REGISTRY.filter((k) => k.requiredEnv.length).map((k) => k.slug)).toEqual(expect.arrayContaining(["weather", "github", "web-search"]));
    expect(SKILL_REGISTRY.find((k) => k.slug === "weather")!.requiredEnv).toEqual(["WEATHER_API_KEY"]);
  });

  it("422 for an eligible_only that is not a boolean", async () => {
    const s = await fresh();
    const res = await s.list({ eligible_only: "maybe" });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(["query", "eligible_only"]);
  });
});

describe("install", () => {
  it("installs a skill that needs nothing: ready, SKILL.md and runtime.json written", async () => {
    const s = await fresh();
    const res = await s.install({ slug: "summarize" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      skill: "summarize",
      status: "installed",
      output: expect.stringContaining("wrote skills/summarize/SKILL.md"),
      message: "Skill 'summarize' installed and ready.",
    });
    expect(readFileSync(join(s.root, "skills/summarize/SKILL.md"), "utf8")).toMatch(/^---\nname: summarize\ndescription: Summarize/);
    expect((await s.runtime()).skills.entries.summarize).toEqual({ enabled: true, env: {}, config: {} });
    expect((await s.detail("summarize")).body).toEqual({
      name: "summarize",
      description: expect.any(String),
      source: "registry",
      ready: true,
      path: "skills/summarize",
    });
    const eligible = await s.list({ eligible_only: "true" });
    expect(eligible.body.map((i: { name: string }) => i.name)).toEqual(["summarize"]);
    expect((await s.list({ eligible_only: "false" })).body.length).toBe(SKILL_REGISTRY.length);
  });

  it("installs without the env a skill needs as installed_missing_env, not ready", async () => {
    const s = await fresh();
    const res = await s.install({ slug: "weather" });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("installed_missing_env");
    expect(res.body.required_env).toEqual(["WEATHER_API_KEY"]);
    expect(res.body.env_applied).toBeUndefined();
    expect(res.body.output).toMatch(/Missing environment: WEATHER_API_KEY/);
    expect(res.body.message).toBe("Skill 'weather' installed; set WEATHER_API_KEY to make it ready.");
    expect((await s.detail("weather")).body.ready).toBe(false);
    expect((await s.list({ eligible_only: "true" })).body).toEqual([]);
  });

  it("applies env: ready, values masked in the answer and redacted in runtime.json, the state and every file", async () => {
    const s = await fresh();
    const res = await s.install({ slug: "weather", env: { WEATHER_API_KEY: SECRET, UNITS: "metric" } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("installed");
    expect(res.body.required_env).toBeUndefined();
    expect(res.body.env_applied).toEqual({ WEATHER_API_KEY: "<redacted>", UNITS: "<redacted>" });
    expect(res.body.output).toMatch(/Environment applied: WEATHER_API_KEY, UNITS/);
    expect((await s.detail("weather")).body.ready).toBe(true);
    expect((await s.runtime()).skills.entries.weather).toEqual({ enabled: true, env: { WEATHER_API_KEY: "<redacted>", UNITS: "<redacted>" }, config: {} });
    expect(JSON.stringify(res.body)).not.toContain(SECRET);
    expect(JSON.stringify(await snapshot(t.app))).not.toContain(SECRET);
    expect(allText(s.root)).not.toContain(SECRET);
    expect(allText(s.root)).not.toContain("metric");
  });

  it("lists what is still missing when some of several variables are given", async () => {
    const s = await fresh();
    const res = await s.install({ slug: "calendar", env: { CALENDAR_CLIENT_ID: "id-1", CALENDAR_CLIENT_SECRET: "" } });
    expect(res.body.status).toBe("installed_missing_env");
    expect(res.body.required_env).toEqual(["CALENDAR_CLIENT_SECRET"]);
    expect(res.body.env_applied).toEqual({ CALENDAR_CLIENT_ID: "<redacted>" });
  });

  it("reinstall overwrites: files rewritten, env and config start again", async () => {
    const s = await fresh();
    await s.install({ slug: "github", env: { GITHUB_TOKEN: "ghp_secret" } }).expect(200);
    await s.update("github", { config: { org: "acme" } }).expect(204);
    writeFileSync(join(s.root, "skills/github/SKILL.md"), "edited by hand");
    const again = await s.install({ slug: "github" });
    expect(again.body.status).toBe("installed_missing_env");
    expect(again.body.output).toMatch(/Replacing the installed github@/);
    expect(readFileSync(join(s.root, "skills/github/SKILL.md"), "utf8")).toMatch(/^---\nname: github/);
    expect((await s.runtime()).skills.entries.github).toEqual({ enabled: true, env: {}, config: {} });
  });

  it("404 for an unknown slug, 422 for a bad body, changing nothing", async () => {
    const s = await fresh();
    const unknown = await s.install({ slug: "no-such-skill" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe("Skill 'no-such-skill' is not in the skill registry.");
    expect((await s.install({})).status).toBe(422);
    const badEnv = await s.install({ slug: "weather", env: { "1BAD": "x" } });
    expect(badEnv.status).toBe(422);
    expect(badEnv.body.detail[0].loc[0]).toBe("body");
    expect((await s.install({ slug: "weather", extra: 1 })).status).toBe(422);
    expect(readdirSync(join(s.root, "skills"))).toEqual([]);
    expect((await s.runtime()).skills.entries).toEqual({});
  });

  it("installs several skills at once without losing any runtime.json entry", async () => {
    const s = await fresh();
    const slugs = ["summarize", "translate", "shell", "todo", "weather", "github"];
    const results = await Promise.all(slugs.map((slug) => s.install({ slug })));
    expect(results.map((r) => r.status)).toEqual(slugs.map(() => 200));
    expect(Object.keys((await s.runtime()).skills.entries).sort()).toEqual([...slugs].sort());
    expect(readdirSync(join(s.root, "skills")).sort()).toEqual([...slugs].sort());
  });

  it("409 with a sentence when runtime.json is not valid JSON, leaving the skill uninstalled", async () => {
    const s = await fresh();
    await request(t.app).put(`/v1/instances/${s.id}/files/content`).set(org.auth).send({ path: "runtime.json", content: "{ broken" }).expect(204);
    const res = await s.install({ slug: "summarize" });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/runtime\.json is not valid JSON/);
    expect((await s.detail("summarize")).status).toBe(404);
    expect(readdirSync(join(s.root, "skills"))).toEqual([]);
  });
});

describe("detail, update, uninstall", () => {
  it("detail is for installed skills only", async () => {
    const s = await fresh();
    const res = await s.detail("weather");
    expect(res.status).toBe(404);
    expect(res.body.detail).toBe("Skill 'weather' is not installed on this instance.");
    expect((await s.detail("__proto__")).status).toBe(404);
  });

  it("update enables, disables, sets and removes env and config (204), mirrored in runtime.json", async () => {
    const s = await fresh();
    await s.install({ slug: "web-search" }).expect(200);
    await s.update("web-search", { env: { SEARCH_API_KEY: "search-secret" } }).expect(204);
    expect((await s.detail("web-search")).body.ready).toBe(true);
    await s.update("web-search", { enabled: false }).expect(204);
    expect((await s.detail("web-search")).body.ready).toBe(false);
    expect((await s.runtime()).skills.entries["web-search"]).toEqual({ enabled: false, env: { SEARCH_API_KEY: "<redacted>" }, config: {} });
    await s.update("web-search", { enabled: true, config: { safe: true, region: "eu" } }).expect(204);
    expect((await s.detail("web-search")).body.ready).toBe(true);
    await s.update("web-search", { env: { SEARCH_API_KEY: "" } }).expect(204);
    expect((await s.detail("web-search")).body.ready).toBe(false);
    expect((await s.runtime()).skills.entries["web-search"]).toEqual({ enabled: true, env: {}, config: { safe: true, region: "eu" } });
    expect(allText(s.root)).not.toContain("search-secret");
  });

  it("update and uninstall answer 404 for a skill that is not installed; update 422 for a bad body", async () => {
    const s = await fresh();
    expect((await s.update("weather", { enabled: true })).status).toBe(404);
    expect((await s.uninstall("weather")).status).toBe(404);
    await s.install({ slug: "todo" }).expect(200);
    expect((await s.update("todo", { enabled: "yes" })).status).toBe(422);
    expect((await s.update("todo", { unknown: 1 })).status).toBe(422);
  });

  it("uninstall removes the files and the configuration (204)", async () => {
    const s = await fresh();
    await s.install({ slug: "notion", env: { NOTION_API_KEY: "n" } }).expect(200);
    await s.install({ slug: "todo" }).expect(200);
    await s.uninstall("notion").expect(204);
    expect(readdirSync(join(s.root, "skills"))).toEqual(["todo"]);
    expect(Object.keys((await s.runtime()).skills.entries)).toEqual(["todo"]);
    expect((await s.detail("notion")).status).toBe(404);
    expect((await s.list()).body.find((i: { name: string }) => i.name === "notion").ready).toBe(false);
    expect((await s.uninstall("notion")).status).toBe(404);
  });

  it("install, update and uninstall need a running instance (409); list and detail do not", async () => {
    const s = await fresh();
    await s.install({ slug: "todo" }).expect(200);
    await forceState(t.app, s.id, { status: "stopped" });
    for (const res of [await s.install({ slug: "shell" }), await s.update("todo", { enabled: false }), await s.uninstall("todo")]) {
      expect(res.status).toBe(409);
      expect(res.body.detail).toBe("Instance is not running (status: stopped).");
    }
    expect((await s.list()).status).toBe(200);
    expect((await s.detail("todo")).body.ready).toBe(true);
    expect(readdirSync(join(s.root, "skills"))).toEqual(["todo"]);
  });
});
