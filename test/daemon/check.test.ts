/**
 * `agent-bridge check` against a real emulator and the platform fakes: a
 * good config passes, and each thing a person gets wrong is one FAIL line
 * saying what to fix. Runs the command's function in-process (no process
 * is needed to print lines and return an exit code).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCheckCommand } from "../../daemon/check/command.js";
import { createFakeDiscord, type FakeDiscord } from "../fakes/discord.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { deadPort, listenOn } from "../helpers/emulator.js";
import { startService, tempDir, type Permission, type Service } from "./daemon-harness.js";

const TG_TOKEN = `123456789:${"A".repeat(20)}${"b_-".repeat(5)}`;
const TG_WRONG = `123456789:${"Z".repeat(35)}`;
const DC_TOKEN = "discord.bot.token-for-check";

let service: Service;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let dir: { path: string; remove(): void };
let configCount = 0;

beforeAll(async () => {
  [service, telegram, discord] = await Promise.all([startService(), createFakeTelegram({ token: TG_TOKEN }), createFakeDiscord({ token: DC_TOKEN })]);
  dir = tempDir();
});
afterAll(async () => {
  await Promise.all([service.close(), telegram.close(), discord.close()]);
  dir.remove();
});

type Json = Record<string, unknown>;

/** Writes a config (JSONC allowed) and runs the check; returns its lines and exit code. */
async function check(
  config: Json | string,
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 5_000,
  offline = false,
): Promise<{ code: number; lines: string[]; text: string }> {
  const file = join(dir.path, `config-${++configCount}.json`);
  writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config, null, 2));
  const lines: string[] = [];
  const code = await runCheckCommand({ configFile: file, env, out: (l) => lines.push(l), timeoutMs, ...(offline ? { offline: true } : {}) });
  return { code, lines, text: lines.join("\n") };
}

const base = (
  overrides: { apiKey?: string; baseUrl?: string; instance?: string; attachments?: boolean; autoStart?: boolean; channels?: Json[] } = {},
): Json => ({
  service: { baseUrl: overrides.baseUrl ?? service.url, apiKey: overrides.apiKey ?? service.key, autoStart: overrides.autoStart ?? false },
  dataDir: join(dir.path, "data"),
  attachments: { enabled: overrides.attachments ?? false },
  routes: [{ match: {}, instance: overrides.instance ?? service.instanceIds[0] }],
  channels: overrides.channels ?? [{ type: "terminal" }],
});

const key = async (permissions: Permission[]) => (await service.mintKey(permissions)).raw;
const failLines = (lines: string[]) => lines.filter((l) => l.startsWith("FAIL"));

describe("agent-bridge check", () => {
  it("--offline checks only the file: a good one with its hash, a bad one with its problems, and nothing is contacted", async () => {
    // A service address nobody listens on: offline, it is never asked.
    const good = await check(base({ baseUrl: "http://127.0.0.1:9" }), {}, 5_000, true);
    expect(good.code).toBe(0);
    expect(good.lines).toEqual([expect.stringMatching(/^ok +config .*: valid$/), expect.stringMatching(/^ok +config hash [0-9a-f]{16} \(offline/)]);
    const noRoutes = await check({ ...base(), routes: [] }, {}, 5_000, true);
    expect(noRoutes.code).toBe(1);
    expect(noRoutes.text).toMatch(/FAIL +routes: none/);
    const bad = await check({ ...base(), queue: { mode: "steer" } }, {}, 5_000, true);
    expect(bad.code).toBe(1);
    expect(bad.text).toMatch(/queue\.mode/);
  });

  it("passes a good config: service, instance, permissions and every channel, one line each", async () => {
    const authDir = join(dir.path, "wa-linked");
    mkdirSync(authDir, { recursive: true });
    // What Baileys' creds.json holds once a phone has paired (`me` set).
    writeFileSync(join(authDir, "creds.json"), JSON.stringify({ me: { id: "4915112345678:1@s.whatsapp.net", name: "me" }, registered: true }));
    const { code, lines } = await check(
      base({
        apiKey: await key(["interact", "files", "configure"]),
        attachments: true,
        autoStart: true,
        channels: [
          { type: "terminal" },
          { type: "telegram", id: "tg", token: "${TG}", apiRoot: telegram.url },
          { type: "discord", id: "dc", token: DC_TOKEN, api: discord.apiBase },
          { type: "whatsapp", id: "wa", authDir },
          { type: "telegram", id: "tg-off", enabled: false, token: "${UNSET}" },
        ],
      }),
      { TG: TG_TOKEN },
    );
    const id = service.instanceIds[0]!;
    expect(lines).toEqual([
      expect.stringMatching(/^ok {4}config .*: valid$/),
      `ok    service: ${service.url} answers and accepts the scoped key`,
      `ok    instance ${id}: exists (status not readable: the key has no \`read\` permission, which the bridge does not need)`,
      `ok    instance ${id}: the key has \`interact\``,
      `ok    instance ${id}: the key has \`files\``,
      `ok    instance ${id}: the key has \`configure\``,
      "ok    channel terminal (terminal): nothing to check",
      "ok    channel tg (telegram): token accepted (bot @agent_bridge_bot)",
      `ok    channel dc (discord): token accepted (bot ${discord.bot.username})`,
      "ok    channel wa (whatsapp): linked to a phone",
      "All checks passed.",
    ]);
    expect(code).toBe(0);
  });

  it("reads the status with a key that may: running", async () => {
    const { code, lines } = await check(base({ apiKey: await key(["interact", "read"]) }));
    expect(lines).toContain(`ok    instance ${service.instanceIds[0]}: exists and is running`);
    expect(code).toBe(0);
  });

  it("an organization key has every permission; its instances are looked up directly", async () => {
    const signup = await fetch(`${service.url}/v1/organization/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "org-check" }),
    });
    const orgKey = ((await signup.json()) as { api_key: string }).api_key;
    // The other organization's key does not see this organization's instance: a 404, told as "not found".
    const { code, lines } = await check(base({ apiKey: orgKey }));
    expect(lines).toContain(`ok    service: ${service.url} answers and accepts the organization key`);
    expect(failLines(lines)).toEqual([
      `FAIL  instance ${service.instanceIds[0]}: not found on the service (used by routes[0]). Fix: correct the instance id in routes[0], or create the instance (GET /v1/instances lists the organization's instances)`,
    ]);
    expect(code).toBe(1);
  });

  it("a wrong key: the service does not accept it", async () => {
    const { code, lines } = await check(base({ apiKey: `svc_sk_${"0".repeat(64)}` }));
    expect(failLines(lines)).toEqual([
      `FAIL  service: ${service.url} does not accept the API key (401 Unauthorized "Invalid API key."). Fix: set service.apiKey to a key of this service (a typo, or a key of another service or emulator?)`,
    ]);
    expect(lines.at(-1)).toBe("1 check failed.");
    expect(code).toBe(1);
  });

  it("a revoked key: mint a new one", async () => {
    const minted = await service.mintKey(["interact"]);
    await service.org.revokeKey({ key_id: minted.id });
    const { code, lines } = await check(base({ apiKey: minted.raw }));
    expect(failLines(lines)).toEqual([
      'FAIL  service: the API key is no longer valid (403 Forbidden "API key has been revoked."). Fix: mint a new key (POST /v1/keys with an organization key) and put it in service.apiKey',
    ]);
    expect(code).toBe(1);
  });

  it("an unknown instance: names the route that uses it", async () => {
    const ghost = "00000000-0000-4000-8000-000000000000";
    const { code, lines } = await check(base({ instance: ghost }));
    expect(failLines(lines)).toEqual([
      `FAIL  instance ${ghost}: not found on the service (used by routes[0]). Fix: correct the instance id in routes[0], or create the instance (GET /v1/instances lists the organization's instances)`,
    ]);
    expect(code).toBe(1);
  });

  it("a dead service URL: says it cannot reach it, and stops there", async () => {
    const url = `http://127.0.0.1:${await deadPort()}`;
    const { code, lines } = await check(base({ baseUrl: url }));
    expect(failLines(lines)).toEqual([
      `FAIL  service: cannot reach ${url} (connection refused). Fix: start the service (or \`agent-bridge emulator\`), or correct service.baseUrl`,
    ]);
    expect(lines.some((l) => l.includes("instance "))).toBe(false);
    expect(code).toBe(1);
  });

  it("missing permissions: interact always, files with attachments on, configure with autoStart", async () => {
    const id = service.instanceIds[0]!;
    const noInteract = await check(base({ apiKey: await key(["read"]) }));
    expect(failLines(noInteract.lines)).toEqual([
      `FAIL  instance ${id}: the key lacks \`interact\`, needed because the bridge sends every message with it (routes[0]). Fix: mint a scoped key with \`interact\` on this instance and put it in service.apiKey`,
    ]);
    expect(noInteract.code).toBe(1);

    const noFilesNoConfigure = await check(base({ apiKey: await key(["interact"]), attachments: true, autoStart: true }));
    expect(failLines(noFilesNoConfigure.lines)).toEqual([
      `FAIL  instance ${id}: the key lacks \`files\`, needed because attachments are on (attachments.enabled) (routes[0]). Fix: mint a scoped key with \`files\` on this instance and put it in service.apiKey, or set attachments.enabled to false`,
      `FAIL  instance ${id}: the key lacks \`configure\`, needed because service.autoStart is on (routes[0]). Fix: mint a scoped key with \`configure\` on this instance and put it in service.apiKey, or set service.autoStart to false`,
    ]);
    expect(noFilesNoConfigure.lines.at(-1)).toBe("2 checks failed.");
  });

  it("a stopped instance without autoStart", async () => {
    const second = await startService({ permissions: ["interact", "read"] });
    try {
      const id = second.instanceIds[0]!;
      await second.org.stopInstance({ instance_id: id });
      const config = { ...base(), service: { baseUrl: second.url, apiKey: second.key }, routes: [{ match: {}, instance: id }] };
      const { code, lines } = await check(config);
      expect(failLines(lines)).toEqual([
        `FAIL  instance ${id}: exists but is stopped (used by routes[0]). Fix: start it (POST /v1/instances/{id}/start), or set service.autoStart to true with a key that has \`configure\``,
      ]);
      expect(code).toBe(1);
    } finally {
      await second.close();
    }
  });

  it("a bad Telegram token: Telegram does not accept it (and the token is never printed)", async () => {
    const { code, lines, text } = await check(base({ channels: [{ type: "telegram", id: "tg", token: TG_WRONG, apiRoot: telegram.url }] }));
    expect(failLines(lines)).toEqual([
      'FAIL  channel tg (telegram): Telegram does not accept the token (401 "Unauthorized"). Fix: put the token @BotFather gave you in channel tg\'s token (or the variable it names); /token in @BotFather shows it again',
    ]);
    expect(text).not.toContain(TG_WRONG.split(":")[1]);
    expect(code).toBe(1);
  });

  it("a bad Discord token: Discord does not accept it", async () => {
    const { code, lines, text } = await check(base({ channels: [{ type: "discord", id: "dc", token: "wrong.token.value", api: discord.apiBase }] }));
    expect(failLines(lines)).toEqual([
      'FAIL  channel dc (discord): Discord does not accept the token (401 Unauthorized). Fix: put the bot token from the Developer Portal (Bot → Reset Token) in channel dc\'s token, without a "Bot " prefix',
    ]);
    expect(text).not.toContain("wrong.token.value");
    expect(code).toBe(1);
  });

  it("a Bot API that cannot be reached", async () => {
    const root = `http://127.0.0.1:${await deadPort()}`;
    const { lines } = await check(base({ channels: [{ type: "telegram", id: "tg", token: TG_TOKEN, apiRoot: root }] }));
    expect(failLines(lines)).toEqual([
      `FAIL  channel tg (telegram): cannot reach the Bot API at ${root} (connection refused). Fix: check the network, or the channel's apiRoot`,
    ]);
  });

  it("a service that accepts connections but never answers: says how long it waited", async () => {
    const silent = createServer(() => undefined);
    const { url, close } = await listenOn(silent);
    try {
      const { code, lines } = await check(base({ baseUrl: url }), {}, 300);
      expect(failLines(lines)).toEqual([
        `FAIL  service: cannot reach ${url} (no answer within 300 ms). Fix: start the service (or \`agent-bridge emulator\`), or correct service.baseUrl`,
      ]);
      expect(code).toBe(1);
    } finally {
      await close();
    }
  });

  it("a WhatsApp channel never linked: tells how to pair", async () => {
    const authDir = join(dir.path, "wa-empty");
    const { code, lines } = await check(base({ channels: [{ type: "whatsapp", id: "wa", authDir }] }));
    expect(failLines(lines)).toEqual([
      `FAIL  channel wa (whatsapp): not linked to a phone (no creds.json in ${authDir}). Fix: run \`agent-bridge run --config ...\` in a terminal and scan the QR code it prints with WhatsApp (Settings → Linked devices)`,
    ]);
    expect(code).toBe(1);

    // Baileys writes creds before pairing completes: without `me` it is still not linked.
    mkdirSync(authDir, { recursive: true });
    writeFileSync(join(authDir, "creds.json"), JSON.stringify({ registered: false, noiseKey: {} }));
    const half = await check(base({ channels: [{ type: "whatsapp", id: "wa", authDir }] }));
    expect(failLines(half.lines)[0]).toContain("not linked to a phone (pairing was never completed");
  });

  it("an invalid config is the first failure, with every problem listed", async () => {
    const { code, lines } = await check(`{
  // comments are fine
  "service": { "apiKey": "svc_sk_x", "baseUrl": "${service.url}", "autostart": true },
  "routes": [],
}`);
    expect(lines[0]).toMatch(/^FAIL {2}config .*: 1 problem$/);
    expect(lines[1]).toBe('        service.autostart: unknown key; did you mean "autoStart"?');
    expect(code).toBe(1);
  });
});
