/**
 * "Adding a platform touches its own folder and one registry line": outside
 * a platform's folder and the registry, no daemon source names a platform,
 * and a platform defined only with the registry's types is parsed,
 * finalised, scrubbed, checked and built like the real ones.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { systemClock } from "../../../shared/clock.js";
import { definePlatform, loadAdapterModule, type PlatformDeps } from "../../../daemon/adapters/platform.js";
import { platforms } from "../../../daemon/adapters/registry.js";
import { platformList, platformName } from "../../../daemon/adapters/platform-names.js";
import { telegramPlatform } from "../../../daemon/adapters/telegram/platform.js";
import { accessSchema, channelCommon } from "../../../daemon/vocabulary/config-fields.js";
import { daemonConfigSchema } from "../../../daemon/config/schema.js";
import { secretsOf } from "../../../daemon/config/secrets.js";
import { checkChannels } from "../../../daemon/check/channels.js";
import { REDACT_PATHS } from "../../../daemon/ops/logger.js";
import type { ChatAdapter } from "../../../daemon/vocabulary/adapter.js";

const root = join(import.meta.dirname, "../../..");
const daemonDir = join(root, "daemon");
const types = platforms.map((p) => p.type);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith(".ts") ? [path] : [];
  });
}

/** Code lines (comments dropped: they may name platforms as examples). */
const codeOf = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => !/^\s*(\/\/|\/?\*)/.test(line))
    .join("\n");

const rel = (path: string) => relative(root, path).split(sep).join("/");

describe("the platform registry is the only place platforms meet the daemon", () => {
  // The foreground entry point runs the terminal chat as the local UI (prompt, notices): a use of the terminal platform, not wiring of it.
  const foregroundUi = new Set(["daemon/cli.ts"]);
  const shared = sources(daemonDir).filter((path) => {
    const r = rel(path);
    if (r === "daemon/adapters/registry.ts" || foregroundUi.has(r)) return false;
    return !types.some((t) => r.startsWith(`daemon/adapters/${t}/`));
  });

  it("knows every platform, each with its own folder", () => {
    // Every folder under daemon/adapters/ is a registered platform, and every registered platform has one;
    // the one exception is a shared part several platforms use, which names no platform (file-links: reply files by URL).
    const sharedFolders = new Set(["file-links"]);
    const folders = readdirSync(join(daemonDir, "adapters"), { withFileTypes: true })
      .filter((e) => e.isDirectory() && !sharedFolders.has(e.name))
      .map((e) => e.name);
    expect([...types].sort()).toEqual([...folders].sort());
    expect(new Set(types).size).toBe(types.length);
    for (const t of types) expect(readdirSync(join(daemonDir, "adapters", t))).toContain("platform.ts");
  });

  it("names every platform a person reads (--help, the console), in the registry's order", () => {
    for (const p of platforms) expect(platformName(p.type), p.type).toMatch(/^[A-Z]/);
    expect(platformList()).toMatch(/^Terminal, Telegram, Discord, WhatsApp, Slack, /);
    expect(platformList()).toMatch(new RegExp(` and ${platforms.at(-1)?.name ?? ""}$`));
  });

  it("config schema, secrets, check, buildAdapters, the daemon and the core name no platform type", () => {
    for (const must of ["daemon/config/schema.ts", "daemon/config/secrets.ts", "daemon/check/channels.ts", "daemon/adapters/index.ts", "daemon/daemon.ts"]) {
      expect(shared.map(rel)).toContain(must);
    }
    const offenders: string[] = [];
    for (const path of shared) {
      const code = codeOf(path);
      for (const t of types) if (code.includes(`"${t}"`) || code.includes(`'${t}'`)) offenders.push(`${rel(path)}: "${t}"`);
    }
    expect(offenders).toEqual([]);
  });

  it("every platform folder has the same layout, and only platform.ts reaches index.ts (lazily)", () => {
    // config.ts: the channel schema; inbound.ts: the pure translation to the core's message;
    // outbound.ts: render, send, edit; connection.ts: connect, reconnect, stop; index.ts: wiring;
    // hand-over.ts: a message to the core through the one hand-over; files.ts: where its files come from.
    for (const t of types) {
      const folder = join(daemonDir, "adapters", t);
      expect(readdirSync(folder), t).toEqual(
        expect.arrayContaining(["platform.ts", "config.ts", "inbound.ts", "outbound.ts", "connection.ts", "index.ts", "hand-over.ts", "files.ts"]),
      );
      expect(codeOf(join(folder, "inbound.ts")), `${t}/inbound.ts`).toMatch(/export (function|const) translateMessage\b/);
      for (const path of sources(folder).filter((p) => !p.endsWith("platform.ts"))) {
        expect(codeOf(path), rel(path)).not.toMatch(/from "\.\/(platform|index)\.js"|import\("\.\/(platform|index)\.js"\)/);
      }
    }
  });

  it("the core imports neither the registry nor any platform folder", () => {
    const offenders = sources(join(daemonDir, "core")).filter((path) => /from "\.\.\/adapters\//.test(readFileSync(path, "utf8")));
    expect(offenders.map(rel)).toEqual([]);
  });

  it("a platform descriptor imports no platform library up front (create imports it lazily)", () => {
    // platform.ts and the config.ts it reads the channel schema from are loaded with the config;
    // everything else in the folder (and the platform's library) only once a channel is enabled.
    for (const t of types) {
      for (const file of ["platform.ts", "config.ts"]) {
        const code = codeOf(join(daemonDir, "adapters", t, file));
        const eager = [...code.matchAll(/^import (?!type )[^;]*? from "([^"]+)";/gm)].map((m) => m[1]);
        for (const spec of eager)
          expect(spec, `${t}/${file}`).not.toMatch(/^(grammy|discord\.js|@whiskeysockets\/baileys|@slack\/|@mattermost\/)|^\.\/(?!platform|config)/);
      }
    }
  });
});

describe("a platform defined with the registry's types alone", () => {
  const echoSchema = z.strictObject({
    type: z.literal("echo"),
    ...channelCommon,
    access: accessSchema.prefault({}),
    key: z.string().min(8),
    home: z.string().optional(),
  });
  type EchoChannelConfig = Omit<z.output<typeof echoSchema>, "id" | "home"> & { id: string; home: string };
  const built: EchoChannelConfig[] = [];
  const echo = definePlatform({
    type: "echo",
    name: "Echo",
    schema: echoSchema,
    finalize: (channel, { id, dataDir }): EchoChannelConfig => ({ ...channel, id, home: channel.home ?? `${dataDir}/echo/${id}` }),
    secrets: (channel) => [channel.key],
    check: async (channel) => ({ status: "ok", subject: `channel ${channel.id} (${channel.type})`, message: `home ${channel.home}` }),
    load: async () => undefined,
    async create(channel, _deps: PlatformDeps): Promise<ChatAdapter> {
      built.push(channel);
      throw new Error("not built in this test");
    },
  });
  const parsed = z
    .array(z.discriminatedUnion("type", [echo.schema, ...platforms.map((p) => p.schema)]))
    .parse([{ type: "echo", key: "echo-key-123" }, { type: "terminal" }]);

  it("parses beside the registered ones and is finalised only by itself", () => {
    const [mine, terminal] = parsed;
    const done = echo.finalize(mine!, { id: "e1", dataDir: "/data" });
    expect(done).toEqual({
      type: "echo",
      id: "e1",
      enabled: true,
      access: { mode: "allowlist", users: [], owners: [], groups: {}, allowUnlistedGroups: false },
      key: "echo-key-123",
      home: "/data/echo/e1",
    });
    expect(echo.finalize(terminal!, { id: "terminal", dataDir: "/data" })).toBeUndefined();
    for (const p of platforms) expect(p.finalize(mine!, { id: "e1", dataDir: "/data" })).toBeUndefined();
  });

  it("answers secrets, check and create for its own channels only", async () => {
    const mine = echo.finalize(parsed[0]!, { id: "e1", dataDir: "/data" })!;
    expect(echo.secrets(mine)).toEqual(["echo-key-123"]);
    for (const p of platforms) expect(p.secrets(mine)).toBeUndefined();
    const checkDeps = { readFile: async () => "", http: async () => ({ status: 200, text: "{}" }), timeoutMs: 100 };
    expect(await echo.check(mine, checkDeps)).toEqual({ status: "ok", subject: "channel e1 (echo)", message: "home /data/echo/e1" });
    const quiet = pino({ level: "silent" }, new Writable({ write: (_c, _e, done) => done() }));
    const state = { get: () => undefined, set: async () => undefined };
    await expect(echo.create(mine, { logger: quiet, state, dataDir: "/data", clock: systemClock, maxAttachmentBytes: 1 })).rejects.toThrow(
      "not built in this test",
    );
    expect(built).toEqual([mine]);
  });
});

describe("the registered platforms, through the registry", () => {
  const config = daemonConfigSchema.parse({
    service: { apiKey: "svc_org_abcdefghijkl" },
    dataDir: "/srv/bridge",
    channels: [
      { type: "terminal" },
      {
        type: "telegram",
        id: "tg",
        token: `123456:${"A".repeat(35)}`,
        mode: "webhook",
        webhook: { url: "https://bot.example", secretToken: "hook-secret-123" },
      },
      { type: "discord", token: "discord-token-xyz" },
      { type: "whatsapp", id: "wa" },
    ],
  });

  it("fills each platform's defaults and collects each channel's secrets", () => {
    expect(config.channels.map((c) => c.id)).toEqual(["terminal", "tg", "discord", "wa"]);
    const wa = config.channels[3];
    expect(wa?.type === "whatsapp" && wa.authDir).toBe(join("/srv/bridge", "whatsapp", "wa"));
    const terminal = config.channels[0];
    expect(terminal?.type === "terminal" && terminal.access.users).toEqual(["local"]);
    expect(secretsOf(config)).toEqual(["svc_org_abcdefghijkl", `123456:${"A".repeat(35)}`, "hook-secret-123", "discord-token-xyz"]);
  });

  it("checks every enabled channel once, in order, through its own probe", async () => {
    const results = await checkChannels(
      { ...config, channels: config.channels.filter((c) => c.type === "terminal" || c.type === "whatsapp") },
      { readFile: async () => JSON.stringify({ me: { id: "4915@s.whatsapp.net" } }), http: async () => ({ status: 500, text: "" }), timeoutMs: 100 },
    );
    expect(results).toEqual([
      { status: "ok", subject: "channel terminal (terminal)", message: "nothing to check" },
      { status: "ok", subject: "channel wa (whatsapp)", message: "linked to a phone" },
    ]);
  });
});

describe("optional platform libraries", () => {
  it("name the ranges package.json gives them as optional peer dependencies", async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "../../../package.json"), "utf8")) as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
      dependencies: Record<string, string>;
    };
    const named = platforms.flatMap((platform) => Object.entries(platform.libraries));
    expect(named.map(([library]) => library)).toContain("grammy");
    for (const [library, range] of named) {
      expect(pkg.peerDependencies[library], library).toBe(range);
      expect(pkg.peerDependenciesMeta[library]?.optional, library).toBe(true);
      expect(pkg.dependencies[library], library).toBeUndefined();
    }
  });

  it("turn Node's missing-package error into a sentence saying what to install", async () => {
    const missing = Object.assign(new Error("Cannot find package 'grammy' imported from /app/dist/daemon/adapters/telegram/index.js"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    await expect(loadAdapterModule(telegramPlatform, () => Promise.reject(missing))).rejects.toThrow('npm install grammy@"^1.46.0"');
    const other = Object.assign(new Error("Cannot find module '/app/dist/x.js'"), { code: "ERR_MODULE_NOT_FOUND" });
    await expect(loadAdapterModule(telegramPlatform, () => Promise.reject(other))).rejects.toBe(other);
  });
});

describe("what a platform brings, on its descriptor", () => {
  it("its user ids' own spellings: each rule takes its own and leaves the others' as they came", () => {
    const rules = Object.fromEntries(platforms.map((p) => [p.type, p.users]));
    expect(rules.whatsapp?.normalize("4915112345678:3@s.whatsapp.net")).toBe("4915112345678");
    expect(rules.whatsapp?.normalize("210000000000042:7@lid")).toBe("210000000000042@lid");
    for (const other of ["123456789", "U0ALICE001", "-100123"]) for (const p of platforms) expect(p.users.normalize(other), p.type).toBe(other);
  });

  it("its secret headers: redacted wherever a logged request carries them", () => {
    const headers = platforms.flatMap((p) => p.secretHeaders);
    expect(headers).toContain("x-telegram-bot-api-secret-token");
    for (const header of headers) expect(REDACT_PATHS).toContain(`["${header}"]`);
  });
});
