import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { platforms } from "../../../daemon/adapters/registry.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse as parseJsonc } from "jsonc-parser";
import { configJsonSchema, configJsonSchemaText } from "../../../daemon/config/json-schema.js";
import { ConfigError, loadConfig, parseConfig } from "../../../daemon/config/load.js";

const KEY = `svc_org_${"a1".repeat(32)}`;
const TG_TOKEN = `123456789:${"A".repeat(20)}${"b_-".repeat(5)}`;

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as ConfigError;
    // The message lists the same problems, one per line.
    for (const p of e.problems) expect(e.message).toContain(p);
    return e.problems;
  }
  throw new Error("expected a ConfigError");
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "daemon-config-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("parseConfig", () => {
  it("fills every default from a minimal config", () => {
    const cfg = parseConfig({ service: { apiKey: KEY } }, {});
    expect(cfg.service).toEqual({
      baseUrl: "http://127.0.0.1:8080",
      apiKey: KEY,
      defaultModel: "claude-sonnet-4-5",
      requestTimeoutMs: 120_000,
      autoStart: false,
    });
    expect(cfg.dataDir).toBe(".data/daemon");
    expect(cfg.logLevel).toBe("info");
    expect(cfg.ops).toEqual({ host: "127.0.0.1", port: 9464, console: true });
    expect(cfg.queue).toEqual({
      concurrencyPerInstance: 4,
      maxPendingPerSession: 20,
      maxPendingTotal: 1000,
      debounceMs: 1500,
      maxTurnAgeMs: 24 * 3600 * 1000,
      mode: "followup",
      typingDelayMs: 500,
    });
    expect(cfg.retry).toEqual({
      maxAttempts: 6,
      baseDelayMs: 500,
      maxDelayMs: 30_000,
      errorCooldownMs: 60_000,
      instanceWaitMs: 120_000,
    });
    expect(cfg.attachments).toEqual({ enabled: true, maxBytes: 20 * 1024 * 1024 });
    expect(cfg.routes).toEqual([]);
    expect(cfg.channels).toEqual([]);
  });

  it("fills channel defaults: id from type, allowlist access, platform settings", () => {
    const cfg = parseConfig(
      {
        service: { apiKey: KEY },
        dataDir: "/var/lib/bridge",
        channels: [{ type: "terminal" }, { type: "telegram", token: TG_TOKEN }, { type: "discord", id: "disc2", token: "abc.def.ghi" }, { type: "whatsapp" }],
      },
      {},
    );
    const [terminal, telegram, discord, whatsapp] = cfg.channels;
    expect(terminal).toMatchObject({ type: "terminal", id: "terminal", enabled: true, userId: "local", prompt: "you> " });
    // The local user, and only they, may use the terminal unless access says otherwise.
    expect(terminal?.access).toEqual({ mode: "allowlist", users: ["local"], owners: [], groups: {}, allowUnlistedGroups: false });
    expect(telegram).toMatchObject({
      id: "telegram",
      apiRoot: "https://api.telegram.org",
      mode: "polling",
      requireMention: true,
      setCommands: true,
      access: { mode: "allowlist", users: [], owners: [], groups: {}, allowUnlistedGroups: false },
    });
    expect(discord).toMatchObject({ id: "disc2", api: "https://discord.com/api", requireMention: true });
    expect(whatsapp).toMatchObject({ id: "whatsapp", printQr: true, requireMention: true, authDir: "/var/lib/bridge/whatsapp/whatsapp" });
  });

  it("keeps a terminal's explicit access as written", () => {
    const cfg = parseConfig({ service: { apiKey: KEY }, channels: [{ type: "terminal", userId: "me", access: { mode: "open" } }] }, {});
    expect(cfg.channels[0]?.access).toEqual({ mode: "open", users: [], owners: [], groups: {}, allowUnlistedGroups: false });
  });

  it("substitutes ${VAR} in any string, and $${VAR} stays literal", () => {
    const cfg = parseConfig(
      {
        service: { apiKey: "${KEY}", baseUrl: "http://${HOST}:${PORT}/" },
        routes: [{ match: {}, instance: "inst_${INST}", instructions: "cost: $${NOT_A_VAR}" }],
        channels: [{ type: "telegram", token: "${TG}", access: { users: ["${ADMIN}"] } }],
      },
      { KEY, HOST: "127.0.0.1", PORT: "9999", INST: "x1", TG: TG_TOKEN, ADMIN: "42" },
    );
    expect(cfg.service.apiKey).toBe(KEY);
    // Trailing slashes go, so paths can be appended.
    expect(cfg.service.baseUrl).toBe("http://127.0.0.1:9999");
    expect(cfg.routes[0]?.instance).toBe("inst_x1");
    expect(cfg.routes[0]?.instructions).toBe("cost: ${NOT_A_VAR}");
    expect(cfg.channels[0]).toMatchObject({ token: TG_TOKEN, access: { users: ["42"] } });
  });

  it("names the key and the variable when one is unset, and says it once", () => {
    const problems = problemsOf(() => parseConfig({ service: { apiKey: "${MISSING_KEY}" }, channels: [{ type: "discord", token: "${DISCORD_TOKEN}" }] }, {}));
    expect(problems).toEqual([
      "service.apiKey: environment variable MISSING_KEY is not set",
      "channels.discord.token: environment variable DISCORD_TOKEN is not set",
    ]);
  });

  it("lists every problem as key.path: problem", () => {
    const problems = problemsOf(() =>
      parseConfig(
        {
          service: { baseUrl: "not a url" },
          logLevel: "loud",
          ops: { port: 70000 },
          queue: { debounceMs: -1, concurency: 3 },
          retry: { baseDelayMs: 1000, maxDelayMs: 10 },
          routes: [{ match: { chatType: "channel" } }],
          channels: [
            { type: "terminal" },
            { type: "telegram", token: "12345:short" },
            { type: "irc" },
            { type: "telegram", id: "tg2", token: TG_TOKEN, mode: "webhook" },
            { type: "discord", token: "Bot abc" },
          ],
        },
        {},
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        "service.apiKey: required",
        'queue.concurency: unknown key; did you mean "concurrencyPerInstance"?',
        "service.baseUrl: must be an http(s) URL",
        'logLevel: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
        "ops.port: must be a port number (0 = pick one), null or false (off)",
        "queue.debounceMs: must not be negative",
        "routes[0].instance: required",
        'routes[0].match.chatType: must be one of "direct", "group"',
        "channels.telegram.token: must look like 123456:ABC... (digits, colon, 35 characters)",
        `channels.irc.type: must be one of ${platforms.map((p) => `"${p.type}"`).join(", ")}`,
        'channels.tg2.webhook: required when mode is "webhook"',
        'channels.discord.token: must be the bare bot token (no whitespace, no "Bot " prefix)',
        "retry.maxDelayMs: must be at least baseDelayMs",
      ]),
    );
    expect(problems).toHaveLength(13);
  });

  it("checks cross-field rules once the shape is right", () => {
    expect(problemsOf(() => parseConfig({ service: { apiKey: KEY }, retry: { baseDelayMs: 1000, maxDelayMs: 10 } }, {}))).toEqual([
      "retry.maxDelayMs: must be at least baseDelayMs",
    ]);
    expect(
      problemsOf(() =>
        parseConfig(
          {
            service: { apiKey: KEY },
            routes: [{ match: { accountId: "tg-typo" }, instance: "i" }],
            channels: [{ type: "terminal" }, { type: "telegram", token: TG_TOKEN }, { type: "telegram", token: TG_TOKEN }],
          },
          {},
        ),
      ),
    ).toEqual([
      'channels[2].id: duplicate account id "telegram" (also channels[1]); give each channel its own id',
      'routes[0].match.accountId: no channel has id "tg-typo"',
    ]);
  });

  it("never echoes secret values in problems", () => {
    const secretKey = "sk-live-SUPERSECRET-value";
    const secretToken = "987654:SUPERSECRET";
    const err = (() => {
      try {
        parseConfig(
          {
            service: { apiKey: "${API}" },
            channels: [
              { type: "telegram", token: secretToken, webhook: 5 },
              { type: "discord", token: "has SUPERSECRET space" },
            ],
          },
          { API: secretKey },
        );
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error("expected a ConfigError");
    })();
    expect(err.problems.length).toBeGreaterThanOrEqual(3);
    expect(err.message).not.toContain("SUPERSECRET");
    expect(err.message).toContain("service.apiKey: must start with svc_org_ or svc_sk_");
  });

  it("accepts svc_sk_ keys and rejects keys with whitespace", () => {
    expect(parseConfig({ service: { apiKey: `svc_sk_${"0".repeat(64)}` } }, {}).service.apiKey).toMatch(/^svc_sk_/);
    expect(problemsOf(() => parseConfig({ service: { apiKey: `${KEY}\n` } }, {}))).toEqual(["service.apiKey: must not contain whitespace"]);
  });

  it("refuses a console beyond loopback without ops.token, naming the ways out, and takes one with a token or with the console off", () => {
    const TOKEN = "console-token-0123456789";
    expect(problemsOf(() => parseConfig({ service: { apiKey: KEY }, ops: { host: "0.0.0.0" } }, {}))).toEqual([
      "ops.token: the console on a host beyond this machine needs ops.token: set one (best as ${NAME}), bind ops.host to 127.0.0.1, or set ops.console to false to serve only /healthz and /metrics",
    ]);
    expect(parseConfig({ service: { apiKey: KEY }, ops: { host: "0.0.0.0", token: "${OPS_TOKEN}" } }, { OPS_TOKEN: TOKEN }).ops.token).toBe(TOKEN);
    expect(parseConfig({ service: { apiKey: KEY }, ops: { host: "0.0.0.0", console: false } }, {}).ops.console).toBe(false);
    expect(parseConfig({ service: { apiKey: KEY }, ops: { host: "127.0.0.2" } }, {}).ops.token).toBeUndefined();
    expect(problemsOf(() => parseConfig({ service: { apiKey: KEY }, ops: { token: "short" } }, {}))).toEqual(["ops.token: must be at least 16 characters"]);
  });

  it("turns the ops server off with null or false, and picks a port with 0", () => {
    expect(parseConfig({ service: { apiKey: KEY }, ops: { port: false } }, {}).ops.port).toBeNull();
    expect(parseConfig({ service: { apiKey: KEY }, ops: { port: null } }, {}).ops.port).toBeNull();
    expect(parseConfig({ service: { apiKey: KEY }, ops: { port: 0 } }, {}).ops.port).toBe(0);
  });

  it("takes ids as exact JSON numbers, and refuses inexact ones", () => {
    const cfg = parseConfig(
      {
        service: { apiKey: KEY },
        routes: [{ match: { userId: 42, chatId: -100123 }, instance: "i" }],
        channels: [{ type: "telegram", token: TG_TOKEN, access: { users: [12345, " 678 "] } }],
      },
      {},
    );
    expect(cfg.routes[0]?.match).toEqual({ userId: "42", chatId: "-100123" });
    expect(cfg.channels[0]?.access.users).toEqual(["12345", "678"]);
    expect(
      problemsOf(() =>
        // biome-ignore lint/correctness/noPrecisionLoss: the point: an id JSON cannot hold exactly as a number.
        parseConfig({ service: { apiKey: KEY }, channels: [{ type: "discord", token: "t", access: { users: [123456789012345678901] } }] }, {}),
      ),
    ).toEqual(["channels.discord.access.users[0]: must be a string: this id is not exact as a JSON number"]);
  });

  it('ignores "//" comment keys at every level, including group maps', () => {
    const cfg = parseConfig(
      {
        "//": "top comment",
        service: { "//": ["a", "b"], apiKey: KEY },
        "//routes": "explained",
        channels: [{ "//": "x", type: "telegram", token: TG_TOKEN, access: { groups: { "//": "by chat id", "-100": { "//note": 1 } } } }],
      },
      {},
    );
    expect(cfg.channels[0]?.access.groups).toEqual({ "-100": { enabled: true } });
    const keys = (v: unknown): string[] => (v && typeof v === "object" ? Object.entries(v).flatMap(([k, x]) => [k, ...keys(x)]) : []);
    expect(keys(cfg).filter((k) => k.startsWith("//"))).toEqual([]);
  });

  it("quotes odd keys in paths", () => {
    expect(
      problemsOf(() => parseConfig({ service: { apiKey: KEY }, channels: [{ type: "whatsapp", access: { groups: { "123@g.us": { users: "x" } } } }] }, {})),
    ).toEqual(['channels.whatsapp.access.groups["123@g.us"].users: must be a list']);
  });
});

describe("loadConfig", () => {
  it("loads config.example.json without the variables of its disabled channels", async () => {
    const cfg = await loadConfig(join(import.meta.dirname, "../../../config.example.json"), { AGENT_BRIDGE_API_KEY: KEY });
    expect(cfg.service.apiKey).toBe(KEY);
    // Disabled channels are checked, then left out: the daemon never starts them.
    expect(cfg.channels.map((c) => [c.type, c.id, c.enabled])).toEqual([["terminal", "terminal", true]]);
    expect(cfg.routes.map((r) => r.instance)).toEqual(["inst_team", "inst_personal"]);
    // The example shows the defaults: it must agree with the schema's own.
    const defaults = parseConfig({ service: { apiKey: KEY } }, {});
    for (const key of ["service", "ops", "queue", "retry", "attachments", "dataDir", "logLevel"] as const) {
      expect(cfg[key]).toEqual(defaults[key]);
    }
    const raw = parseJsonc(await readFile(join(import.meta.dirname, "../../../config.example.json"), "utf8")) as {
      $schema: string;
      channels: Record<string, unknown>[];
    };
    expect(raw.channels.length).toBe(platforms.length);
    expect(raw.$schema).toBe("./config.schema.json");
  });

  it("loads every channel of config.example.json once enabled, with its variables set", async () => {
    const text = (await readFile(join(import.meta.dirname, "../../../config.example.json"), "utf8")).replaceAll('"enabled": false', '"enabled": true');
    const path = join(dir, "all-enabled.json");
    await writeFile(path, text);
    const cfg = await loadConfig(path, {
      AGENT_BRIDGE_API_KEY: KEY,
      TELEGRAM_BOT_TOKEN: TG_TOKEN,
      DISCORD_BOT_TOKEN: "abc.def.ghi",
      SLACK_BOT_TOKEN: "xoxb-1-2-abc",
      SLACK_SIGNING_SECRET: "0123456789abcdef0123",
      MATRIX_ACCESS_TOKEN: "syt_example_access_token_0123",
      GOOGLE_CHAT_KEY: '{"type":"service_account"}',
      FEISHU_APP_SECRET: "0123456789abcdef0123456789abcdef",
      TEAMS_APP_PASSWORD: "teams-client-secret-0123",
      LINE_CHANNEL_ACCESS_TOKEN: "lineChannelAccessToken0123456789abcdefABCDEF=",
      LINE_CHANNEL_SECRET: "0123456789abcdef0123456789abcdef",
      MATTERMOST_BOT_TOKEN: "abcdefghijklmnopqrstuvwxyz",
    });
    // The example lists every platform once, in the registry's order.
    expect(cfg.channels.map((c) => c.type)).toEqual(platforms.map((p) => p.type));
    expect(problemsOf(() => parseConfig(parseJsonc(text), { AGENT_BRIDGE_API_KEY: KEY }))).toEqual([
      "channels.telegram.token: environment variable TELEGRAM_BOT_TOKEN is not set",
      "channels.discord.token: environment variable DISCORD_BOT_TOKEN is not set",
      "channels.slack.botToken: environment variable SLACK_BOT_TOKEN is not set",
      "channels.slack.signingSecret: environment variable SLACK_SIGNING_SECRET is not set",
      "channels.matrix.access_token: environment variable MATRIX_ACCESS_TOKEN is not set",
      "channels.gchat.serviceAccountKey: environment variable GOOGLE_CHAT_KEY is not set",
      "channels.feishu.app_secret: environment variable FEISHU_APP_SECRET is not set",
      "channels.teams.app_password: environment variable TEAMS_APP_PASSWORD is not set",
      "channels.line.channel_access_token: environment variable LINE_CHANNEL_ACCESS_TOKEN is not set",
      "channels.line.channel_secret: environment variable LINE_CHANNEL_SECRET is not set",
      "channels.mattermost.bot_token: environment variable MATTERMOST_BOT_TOKEN is not set",
    ]);
  });

  it("still checks a disabled channel's shape and names it by id", () => {
    expect(
      problemsOf(() =>
        parseConfig(
          {
            service: { apiKey: KEY },
            channels: [
              { type: "telegram", id: "tg-main", enabled: false, token: "${UNSET_TOKEN}", requireMentoin: true },
              { type: "discord", enabled: false, token: "Bot x" },
            ],
          },
          {},
        ),
      ),
    ).toEqual([
      'channels["tg-main"].requireMentoin: unknown key; did you mean "requireMention"?',
      'channels.discord.token: must be the bare bot token (no whitespace, no "Bot " prefix)',
    ]);
  });

  it("suggests the key meant for a typo, at any depth, and none when nothing is close", () => {
    expect(
      problemsOf(() =>
        parseConfig(
          {
            service: { apiKey: KEY, baseURL: "http://x" },
            queue: { debounce: 5 },
            channels: [
              { type: "telegram", token: TG_TOKEN, acess: {} },
              { type: "terminal", promt: "> " },
            ],
            zebra: 1,
          },
          {},
        ),
      ),
    ).toEqual(
      expect.arrayContaining([
        'service.baseURL: unknown key; did you mean "baseUrl"?',
        'queue.debounce: unknown key; did you mean "debounceMs"?',
        'channels.telegram.acess: unknown key; did you mean "access"?',
        'channels.terminal.promt: unknown key; did you mean "prompt"?',
        "zebra: unknown key",
      ]),
    );
  });

  it("reads JSON with comments and trailing commas, and accepts a $schema key", async () => {
    const path = join(dir, "jsonc.json");
    await writeFile(
      path,
      `// the bridge
{
  "$schema": "./config.schema.json",
  /* block comment */
  "service": { "apiKey": "${KEY}", }, // trailing comma above
  "routes": [{ "match": {}, "instance": "i1" },],
}
`,
    );
    const cfg = await loadConfig(path, {});
    expect(cfg.routes[0]?.instance).toBe("i1");
    expect("$schema" in cfg).toBe(false);
  });

  it("config.example.json passes config.schema.json in a JSON Schema validator, and a typo does not", async () => {
    const schema = JSON.parse(await readFile(join(import.meta.dirname, "../../../config.schema.json"), "utf8")) as object;
    const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
    const example = parseJsonc(await readFile(join(import.meta.dirname, "../../../config.example.json"), "utf8")) as Record<string, unknown>;
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...example, service: { apiKey: "${KEY}", autostart: true } })).toBe(false);
    expect(validate.errors?.map((e) => `${e.instancePath} ${e.message}`)).toContain("/service must NOT have additional properties");
  });

  it("commits config.schema.json as generated from the zod schema", async () => {
    const committed = await readFile(join(import.meta.dirname, "../../../config.schema.json"), "utf8");
    expect(committed).toBe(configJsonSchemaText());
    const schema = JSON.parse(committed) as { properties: Record<string, unknown>; additionalProperties: boolean };
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(["$schema", "service", "routes", "channels"]));
    expect(schema.additionalProperties).toBe(false);
  });

  it("describes every option, with its default where it has one, the platforms' channel keys included", () => {
    type Node = { description?: string; default?: unknown; properties?: Record<string, Node>; items?: Node; anyOf?: Node[]; oneOf?: Node[] };
    const undescribed: string[] = [];
    const isSection = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);
    const check = (name: string, node: Node) => {
      if (!node.description) undescribed.push(name);
      // A section's `{}` default only means "its fields' defaults": those fields say theirs.
      else if (node.default !== undefined && !isSection(node.default) && !/\bDefault:? /.test(node.description)) undescribed.push(`${name} (its default)`);
      walk(name, node);
    };
    const walk = (path: string, node: Node) => {
      for (const [key, child] of Object.entries(node.properties ?? {})) check(`${path}.${key}`, child);
      for (const variant of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) walk(path, variant);
      if (node.items) walk(`${path}[]`, node.items);
    };
    const schema = configJsonSchema() as Node & { properties: Record<string, Node> };
    const { channels, ...rest } = schema.properties;
    walk("", { properties: rest });
    check(".channels", { ...channels!, items: {} });
    for (const variant of channels!.items!.anyOf ?? channels!.items!.oneOf ?? []) {
      const type = (variant.properties?.type as { const?: string } | undefined)?.const ?? "?";
      for (const [key, child] of Object.entries(variant.properties ?? {})) check(`.channels[${type}].${key}`, child);
    }
    expect([...new Set(undescribed)]).toEqual([]);
  });

  it("reports a missing file as a ConfigError", async () => {
    await expect(loadConfig(join(dir, "nope.json"), {})).rejects.toThrow(/cannot read it \(ENOENT\)/);
  });

  it("reports where JSON is broken without quoting the file", async () => {
    const path = join(dir, "broken.json");
    await writeFile(path, `{\n  "service": { "apiKey": "svc_org_TOPSECRETVALUE" }\n  "x": 1\n}\n`);
    const err = await loadConfig(path, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/not valid JSON at line 3 column \d+/);
    expect((err as Error).message).not.toContain("TOPSECRET");
  });

  it("validates the file it read and names it", async () => {
    const path = join(dir, "bad.json");
    await writeFile(path, JSON.stringify({ service: {} }));
    const err = await loadConfig(path, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual(["service.apiKey: required"]);
    expect((err as Error).message).toContain(path);
  });
});

describe("streaming options", () => {
  it("defaults to partial streaming with the adapter's own edit pace, and refuses an edit interval out of range", () => {
    const cfg = parseConfig({ service: { apiKey: KEY }, channels: [{ type: "telegram", token: TG_TOKEN }] }, {});
    const tg = cfg.channels[0]!;
    expect(tg.type === "telegram" && [tg.streaming, tg.minEditIntervalMs]).toEqual(["partial", undefined]);
    for (const bad of [-1, 60_001, 1.5]) {
      const problems = problemsOf(() =>
        parseConfig({ service: { apiKey: KEY }, channels: [{ type: "discord", token: "abc.def.ghi", minEditIntervalMs: bad }] }, {}),
      );
      expect(problems, String(bad)).toHaveLength(1);
      expect(problems[0], String(bad)).toMatch(/^channels\.discord\.minEditIntervalMs: /);
    }
    expect(problemsOf(() => parseConfig({ service: { apiKey: KEY }, channels: [{ type: "telegram", token: TG_TOKEN, streaming: "full" }] }, {}))[0]).toMatch(
      /^channels\.telegram\.streaming: /,
    );
  });
});
