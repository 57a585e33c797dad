/**
 * The snapshot round-trips after any sequence of requests: random sequences
 * over every write route of the service and the control plane, across
 * sandboxes and with fault rules in force, then export, restart on the same
 * data directory and export again (persisted), reset, import and export
 * again (copied and imported): all three the same. No request may end in
 * the catch-all 500, whatever came before it. (The billing page's plan
 * switch, a write outside the API, is driven too.)
 */
import fc from "fast-check";
import { expect, it, onTestFinished } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { SKILL_REGISTRY } from "../../emulator/skills/registry.js";
import { createManualClock, type ManualClock } from "../../shared/clock.js";
import { providerKey, tempDir } from "../helpers/emulator.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  body: Json;
}

/** What the run created so far, to aim the next request at (ids of things since gone stay: they get 404s). */
interface World {
  url: string;
  clock: ManualClock;
  /** Organization keys, global and per sandbox, with their organization. */
  orgs: { key: string; id: string }[];
  instances: { id: string; key: string }[];
  /** Scoped keys: their id, the organization key that made them, the key itself and its instance. */
  scoped: { id: string; key: string; raw: string; instance: string }[];
  sandboxes: string[];
  faults: string[];
  answers: Answer[];
}

const pick = <T>(list: readonly T[], index: number): T | undefined => (list.length ? list[index % list.length] : undefined);

/** An instance to aim at, with the organization's key or (on odd `c`) a scoped key made for it. */
function instanceOf(w: World, s: Step): { id: string; key: string } | undefined {
  const instance = pick(w.instances, s.a);
  const scoped = instance && s.c % 2 ? w.scoped.find((one) => one.instance === instance.id) : undefined;
  return instance && scoped ? { id: instance.id, key: scoped.raw } : instance;
}

async function call(
  world: World,
  method: string,
  path: string, // A missing key (the picked organization may not exist) sends no authorization.
  options: { key?: string | undefined; body?: unknown; form?: FormData } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | FormData | null = null;
  if (options.form) body = options.form;
  else if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  const res = await fetch(`${world.url}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = text ? (JSON.parse(text) as Json) : {};
  } catch {
    parsed = { text };
  }
  const answer = { status: res.status, body: parsed };
  world.answers.push(answer);
  return answer;
}

const CHANNELS: Record<string, Json> = {
  telegram: { token: TELEGRAM_BOT_TOKEN },
  signal: { account: "+15551234567" },
  whatsapp: {},
  googlechat: { audience_type: "project-number", audience: "123456789012" },
};
const CHANNEL_NAMES = Object.keys(CHANNELS);
// Three skills and four channels, so installs, updates and uninstalls meet each other often.
const SKILLS = SKILL_REGISTRY.slice(0, 3).map((skill) => skill.slug);
const PATHS = ["workspace/a.txt", "workspace/dir/b.md", "notes.txt", "workspace/dir", "runtime.json"];

/** One request: which route, and small numbers choosing its target and body. */
type Step = { route: string; a: number; b: number; c: number; flag: boolean };

/** Every write route (and a few reads that move lazy state), each a function of the world and the step's numbers. */
const ROUTES: Record<string, (w: World, s: Step) => Promise<unknown>> = {
  async signup(w, s) {
    const res = await call(w, "POST", "/v1/organization/signup", { body: { name: `org-${s.a}` } });
    if (res.status === 201) w.orgs.push({ key: res.body.api_key as string, id: (res.body.organization as Json).id as string });
  },
  async updateOrganization(w, s) {
    const org = pick(w.orgs, s.a);
    const value = s.flag ? providerKey("anthropic") : "";
    return call(w, "PATCH", "/v1/organization", {
      key: org?.key,
      body: s.c % 3 === 0 ? { name: `renamed-${s.b}` } : { model_api_keys: { anthropic: value, openai: s.b % 2 ? providerKey("openai") : "" } },
    });
  },
  async createCheckout(w, s) {
    const res = await call(w, "POST", "/v1/subscription/checkout", { key: pick(w.orgs, s.a)?.key, body: { tier: s.flag ? "crab" : "lobster" } });
    // The billing page the link opens switches the plan (a write outside /v1).
    if (res.status === 200 && s.c % 2) {
      const page = new URL(res.body.url as string).pathname;
      const switched = await fetch(`${w.url}${page}`, {
        method: "POST",
        body: new URLSearchParams({ tier: pick(["shrimp", "crab", "lobster"], s.b)! }),
        redirect: "manual",
      });
      w.answers.push({ status: switched.status, body: {} });
      await switched.body?.cancel();
    }
  },
  createPortal: (w, s) => call(w, "POST", "/v1/subscription/portal", { key: pick(w.orgs, s.a)?.key }),
  async createKey(w, s) {
    const instance = pick(w.instances, s.b);
    if (!instance) return;
    const permissions = s.flag ? ["read", "interact"] : ["read", "interact", "configure", "files", "channels"];
    const res = await call(w, "POST", "/v1/keys", { key: instance.key, body: { name: `key-${s.a}`, instance_ids: [instance.id], permissions } });
    if (res.status === 201) w.scoped.push({ id: res.body.id as string, key: instance.key, raw: res.body.raw_key as string, instance: instance.id });
  },
  async revokeKey(w, s) {
    const key = pick(w.scoped, s.a);
    if (key) return call(w, "DELETE", `/v1/keys/${key.id}`, { key: key.key });
  },
  async createInstance(w, s) {
    const org = pick(w.orgs, s.a);
    const res = await call(w, "POST", "/v1/instances", {
      key: org?.key,
      body: { name: `agent-${s.b}`, ...(s.flag ? { runtime_config: { level: s.c } } : {}) },
    });
    if (res.status === 201 && org) w.instances.push({ id: res.body.id as string, key: org.key });
  },
  async updateInstance(w, s) {
    const i = instanceOf(w, s);
    if (i)
      return call(w, "PATCH", `/v1/instances/${i.id}`, {
        key: i.key,
        body: s.flag ? { name: `new-${s.b}` } : { runtime_config: s.c % 2 ? null : { nested: { k: s.b } } },
      });
  },
  async startInstance(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "POST", `/v1/instances/${i.id}/start`, { key: i.key });
  },
  async stopInstance(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "POST", `/v1/instances/${i.id}/stop`, { key: i.key });
  },
  async deleteInstance(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "DELETE", `/v1/instances/${i.id}`, { key: i.key });
  },
  async createResponse(w, s) {
    const i = instanceOf(w, s);
    if (!i) return;
    const path = s.flag ? `/v1/instances/${i.id}/session/s-${s.b % 3}/responses` : `/v1/instances/${i.id}/responses`;
    return call(w, "POST", path, { key: i.key, body: { model: "agent", input: `hello ${s.c}` } });
  },
  async connectChannel(w, s) {
    const i = instanceOf(w, s);
    const channel = pick(CHANNEL_NAMES, s.b)!;
    if (i) return call(w, "POST", `/v1/instances/${i.id}/channels/${channel}/connect`, { key: i.key, body: { config: CHANNELS[channel] } });
  },
  async disconnectChannel(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "POST", `/v1/instances/${i.id}/channels/${pick(CHANNEL_NAMES, s.b)}/disconnect`, { key: i.key });
  },
  async pairChannel(w, s) {
    const i = instanceOf(w, s);
    if (!i) return;
    const channel = pick(CHANNEL_NAMES, s.b)!;
    if (s.flag) {
      await call(w, "POST", `/v1/instances/${i.id}/channels/${channel}/connect`, { key: i.key, body: { config: CHANNELS[channel] } });
      if (channel === "whatsapp") await call(w, "POST", `/_emulator/instances/${i.id}/channels/whatsapp/scan`);
    }
    return call(w, "POST", `/v1/instances/${i.id}/channels/${channel}/pair`, { key: i.key, body: { code: `CODE-${s.c % 4}` } });
  },
  async installSkill(w, s) {
    const i = instanceOf(w, s);
    const slug = pick(SKILLS, s.b)!;
    const skill = SKILL_REGISTRY.find((one) => one.slug === slug)!;
    const env = s.flag ? Object.fromEntries(skill.requiredEnv.map((name) => [name, `secret-${s.c}`])) : undefined;
    if (i) return call(w, "POST", `/v1/instances/${i.id}/skills/install`, { key: i.key, body: { slug, ...(env ? { env } : {}) } });
  },
  async updateSkill(w, s) {
    const i = instanceOf(w, s);
    if (!i) return;
    const slug = pick(SKILLS, s.b)!;
    // Mostly on a skill just installed: an update of one that is not is a 404 that changes nothing.
    if (s.flag) await call(w, "POST", `/v1/instances/${i.id}/skills/install`, { key: i.key, body: { slug } });
    const body = [{ enabled: s.c % 2 === 0 }, { env: { EXTRA: s.c > 3 ? "" : `v-${s.c}` } }, { config: { depth: { n: s.c } } }][s.c % 3];
    return call(w, "PATCH", `/v1/instances/${i.id}/skills/${slug}`, { key: i.key, body });
  },
  async uninstallSkill(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "DELETE", `/v1/instances/${i.id}/skills/${pick(SKILLS, s.b)}`, { key: i.key });
  },
  async writeFile(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "PUT", `/v1/instances/${i.id}/files/content`, { key: i.key, body: { path: pick(PATHS, s.b), content: `text ${s.c}` } });
  },
  async deleteFile(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "DELETE", `/v1/instances/${i.id}/files?path=${encodeURIComponent(pick(PATHS, s.b)!)}`, { key: i.key });
  },
  async moveFile(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "POST", `/v1/instances/${i.id}/files/move`, { key: i.key, body: { source: pick(PATHS, s.b), destination: pick(PATHS, s.c) } });
  },
  async mkdir(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "POST", `/v1/instances/${i.id}/files/mkdir?path=${encodeURIComponent(`workspace/d${s.b % 3}`)}`, { key: i.key });
  },
  async uploadFile(w, s) {
    const i = instanceOf(w, s);
    if (!i) return;
    const form = new FormData();
    form.append("path", pick(PATHS, s.b)!);
    form.append("file", new Blob([`upload ${s.c}`]), "f.bin");
    return call(w, "POST", `/v1/instances/${i.id}/files/upload`, { key: i.key, form });
  },
  async adminReset(w) {
    await call(w, "POST", "/_emulator/reset");
  },
  async adminImportSnapshot(w) {
    // A state taken and put back mid-run: what follows works on it as on any other.
    const taken = await call(w, "GET", "/_emulator/snapshot");
    if (taken.status === 200) return call(w, "PUT", "/_emulator/snapshot", { body: taken.body });
  },
  async adminCreateFault(w, s) {
    const i = pick(w.instances, s.b);
    const rules: Json[] = [
      { target: "api", path: "/v1/instances", ...(s.flag ? { method: "POST" } : {}), status: 503, times: 1 + (s.c % 2) },
      { target: "provision", times: 1 },
      { target: "gateway", ...(i ? { instance_id: i.id } : {}), status: 502, times: 1 },
      { target: "gateway", error: "reset", times: 1 },
    ];
    const sandbox = s.flag ? pick(w.sandboxes, s.a) : undefined;
    const res = await call(w, "POST", sandbox ? `/_emulator/sandboxes/${sandbox}/faults` : "/_emulator/faults", { body: rules[s.c % rules.length] });
    if (res.status === 201) w.faults.push(res.body.id as string);
  },
  async adminDeleteFault(w, s) {
    const fault = pick(w.faults, s.a);
    if (fault) return call(w, "DELETE", `/_emulator/faults/${fault}`);
  },
  adminClearFaults: (w) => call(w, "DELETE", "/_emulator/faults"),
  async adminForceState(w, s) {
    const i = instanceOf(w, s);
    const status = pick(["running", "stopped", "error", "provisioning", "terminated"], s.b);
    if (i) return call(w, "POST", `/_emulator/instances/${i.id}/state`, { body: { status, ...(s.flag ? { gateway_url: "http://127.0.0.1:9/" } : {}) } });
  },
  async adminScan(w, s) {
    const i = instanceOf(w, s);
    if (i) return call(w, "POST", `/_emulator/instances/${i.id}/channels/whatsapp/scan`);
  },
  async adminSetTier(w, s) {
    const org = pick(w.orgs, s.a);
    if (org) return call(w, "POST", `/_emulator/organizations/${org.id}/tier`, { body: { tier: pick(["shrimp", "crab", "lobster"], s.b) } });
  },
  async modelScript(w, s) {
    const script = { rules: [{ name: `r${s.c}`, match: { input: "hello" }, answer: { text: `scripted ${s.c}` } }] };
    const i = instanceOf(w, s);
    const sandbox = pick(w.sandboxes, s.a);
    const scope = [
      "/_emulator/model-script",
      i ? `/_emulator/instances/${i.id}/model-script` : undefined,
      sandbox ? `/_emulator/sandboxes/${sandbox}/model-script` : undefined,
    ][s.b % 3];
    if (scope) return call(w, s.flag ? "PUT" : "DELETE", scope, s.flag ? { body: script } : {});
  },
  async adminCreateSandbox(w, s) {
    const res = await call(w, "POST", "/_emulator/sandboxes", { body: { name: `sandbox-${s.a}` } });
    if (res.status !== 201) return;
    w.sandboxes.push(res.body.id as string);
    w.orgs.push({ key: res.body.api_key as string, id: res.body.organization_id as string });
  },
  async adminDeleteSandbox(w, s) {
    const sandbox = pick(w.sandboxes, s.a);
    if (sandbox) return call(w, "DELETE", `/_emulator/sandboxes/${sandbox}`);
  },
  async adminResetSandbox(w, s) {
    const sandbox = pick(w.sandboxes, s.a);
    if (sandbox) return call(w, "POST", `/_emulator/sandboxes/${sandbox}/reset`);
  },
  async adminSandboxClock(w, s) {
    const sandbox = pick(w.sandboxes, s.a);
    if (sandbox) return call(w, "POST", `/_emulator/sandboxes/${sandbox}/clock`, { body: { advance_ms: s.c * 60_000 } });
  },
  // Time passes (provisioning ends, keys expire); a read completes what it made due.
  async getInstance(w, s) {
    if (s.flag) w.clock.advance(1_000);
    const i = instanceOf(w, s);
    if (i) return call(w, "GET", `/v1/instances/${i.id}`, { key: i.key });
  },
};

/** Rare: they throw the run's state away. */
const RARE = new Set(["adminReset", "adminImportSnapshot", "adminDeleteSandbox", "adminResetSandbox"]);
const step = fc.record({
  route: fc.oneof(
    ...Object.keys(ROUTES).map((route) => ({
      arbitrary: fc.constant(route),
      weight: RARE.has(route) ? 1 : route === "signup" || route === "createInstance" ? 6 : 3,
    })),
  ),
  a: fc.nat(7),
  b: fc.nat(7),
  c: fc.nat(7),
  flag: fc.boolean(),
});

/** What every run starts from, so its requests have targets: an organization with a provider key and a running instance, globally and in a sandbox. */
async function prepare(w: World): Promise<void> {
  const step: Step = { route: "", a: 0, b: 0, c: 0, flag: true };
  await ROUTES.signup!(w, step);
  await ROUTES.adminCreateSandbox!(w, step);
  for (const org of w.orgs) {
    expect((await call(w, "PATCH", "/v1/organization", { key: org.key, body: { model_api_keys: { anthropic: providerKey("anthropic") } } })).status).toBe(200);
    await ROUTES.createInstance!(w, { ...step, a: w.orgs.indexOf(org) });
  }
  expect(w.instances).toHaveLength(2);
  for (const [a] of w.instances.entries()) await ROUTES.getInstance!(w, { ...step, a });
}

async function start(dataDir: string, clock = createManualClock()): Promise<{ emulator: Emulator; url: string }> {
  const emulator = await createEmulator({ dataDir, clock, provisionMs: 1_000, flushMs: 1, seed: 7, validateResponses: true });
  // Closed when the test finishes too (closing a closed emulator is a no-op).
  onTestFinished(() => emulator.close());
  return { emulator, url: await emulator.listen(0, "127.0.0.1") };
}

it("round-trips the snapshot after any sequence of write requests, across sandboxes and with faults", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 60, size: "max" }), async (steps) => {
      const dir = tempDir("agent-bridge-snapshot-property-");
      onTestFinished(dir.remove);
      const clock = createManualClock();
      const first = await start(dir.path, clock);
      const world: World = { url: first.url, clock, orgs: [], instances: [], scoped: [], sandboxes: [], faults: [], answers: [] };
      await prepare(world);
      for (const one of steps) await ROUTES[one.route]!(world, one);
      // No request of the run hit the catch-all.
      expect(world.answers.filter((answer) => answer.body.detail === "Internal error.")).toEqual([]);

      const exported = await call(world, "GET", "/_emulator/snapshot");
      expect(exported.status, JSON.stringify(exported.body)).toBe(200);
      await first.emulator.close();

      // Persisted: the same data directory opened again exports the same state.
      const second = await start(dir.path, clock);
      world.url = second.url;
      expect((await call(world, "GET", "/_emulator/snapshot")).body).toEqual(exported.body);

      // Copied: reset, import what was exported, export again.
      expect((await call(world, "POST", "/_emulator/reset")).status).toBe(204);
      const imported = await call(world, "PUT", "/_emulator/snapshot", { body: exported.body });
      expect(imported.status, JSON.stringify(imported.body)).toBe(204);
      expect((await call(world, "GET", "/_emulator/snapshot")).body).toEqual(exported.body);
      await second.emulator.close();
    }),
    { numRuns: 15 },
  );
}, 120_000);
