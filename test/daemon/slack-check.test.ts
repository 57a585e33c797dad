/**
 * `agent-bridge check` for a Slack channel, against the Slack fake: auth.test
 * says whether the bot token is accepted, and the scopes Slack reports with
 * it (`x-oauth-scopes`) are held against what the config's features need,
 * the missing ones named. The tokens are never printed.
 */
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCheckCommand } from "../../daemon/check/command.js";
import { ALL_SCOPES, createFakeSlack, type FakeSlack } from "../fakes/slack.js";
import { deadPort } from "../helpers/emulator.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";

const BOT_TOKEN = "xoxb-1111-2222-checkBotTokenSecret";
const SIGNING_SECRET = "checkSigningSecret0123456789abcd";

let service: Service;
let full: FakeSlack;
let narrow: FakeSlack;
let dir: { path: string; remove(): void };
let count = 0;

beforeAll(async () => {
  [service, full, narrow] = await Promise.all([
    startService(),
    createFakeSlack({ botToken: BOT_TOKEN, appToken: "xapp-1-A0APP00001-3333-checkAppToken", signingSecret: SIGNING_SECRET }),
    // Installed with DM scopes only: a config that serves channels lacks the channel ones.
    createFakeSlack({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, scopes: ["chat:write", "im:history"] }),
  ]);
  dir = tempDir();
});
afterAll(async () => {
  await Promise.all([service.close(), full.close(), narrow.close()]);
  dir.remove();
});

async function check(channel: Record<string, unknown>): Promise<{ code: number; lines: string[] }> {
  const file = join(dir.path, `config-${++count}.json`);
  const config = {
    service: { baseUrl: service.url, apiKey: service.key, autoStart: false },
    dataDir: join(dir.path, "data"),
    attachments: { enabled: false },
    routes: [{ match: {}, instance: service.instanceIds[0] }],
    channels: [{ type: "slack", id: "sl", botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET, ...channel }],
  };
  writeFileSync(file, JSON.stringify(config));
  const lines: string[] = [];
  const code = await runCheckCommand({ configFile: file, env: {}, out: (l) => lines.push(l), timeoutMs: 5_000 });
  return { code, lines };
}

const slackLine = (lines: string[]) => lines.find((l) => l.includes("channel sl (slack)")) ?? "";

it("passes a token Slack accepts with every scope the config needs", async () => {
  const { code, lines } = await check({ api: full.apiBase, access: { users: ["U1"], groups: { C0GENERAL1: {} } } });
  expect(slackLine(lines)).toMatch(/^ok {4}channel sl \(slack\): token accepted \(bot agent in Fake Team\); scopes cover the config/);
  expect(code).toBe(0);
  expect(ALL_SCOPES).toContain("app_mentions:read");
});

it("names the missing scopes: a failure for what the bridge cannot work without, with what to do", async () => {
  const { code, lines } = await check({ api: narrow.apiBase, access: { users: ["U1"], groups: { C0GENERAL1: {} } } });
  const line = slackLine(lines);
  expect(line.startsWith("FAIL  channel sl (slack): token accepted (bot agent in Fake Team) but missing scopes: app_mentions:read (")).toBe(true);
  expect(line).toContain("channels:history (");
  expect(line).toContain("reactions:write (for the acknowledgement reaction)");
  expect(line).toMatch(/Fix: add app_mentions:read, channels:history, .* under OAuth & Permissions → Bot Token Scopes, then reinstall the app/);
  expect(code).not.toBe(0);
});

it("only warns when what is missing serves an optional feature", async () => {
  const { lines } = await check({ api: narrow.apiBase, access: { users: ["U1"] }, ackReaction: { scope: "off" } });
  expect(slackLine(lines)).toMatch(/^warn {2}channel sl \(slack\): token accepted .* missing scopes: files:read \(to fetch files people send\), files:write/);
});

it("Socket Mode: an app token Slack refuses is a failure saying what to put there", async () => {
  const good = await check({ api: full.apiBase, mode: "socket", appToken: "xapp-1-A0APP00001-3333-checkAppToken", access: { users: ["U1"] } });
  expect(slackLine(good.lines)).toMatch(/^ok {4}channel sl \(slack\): token accepted/);
  const bad = await check({ api: full.apiBase, mode: "socket", appToken: "xapp-1-A0-wrong", access: { users: ["U1"] } });
  expect(slackLine(bad.lines)).toBe(
    "FAIL  channel sl (slack): Slack does not accept the app token for Socket Mode (invalid_auth). Fix: put an app-level token with connections:write (Basic Information → App-Level Tokens, xapp-...) in channel sl's appToken, and turn Socket Mode on",
  );
  expect(bad.lines.join("\n")).not.toContain("xapp-1-A0-wrong");
});

it("a token Slack refuses, and a Slack that cannot be reached, without printing the token", async () => {
  const refused = await check({ api: full.apiBase, botToken: "xoxb-9999-wrong-token" });
  expect(slackLine(refused.lines)).toBe(
    "FAIL  channel sl (slack): Slack does not accept the bot token (invalid_auth). Fix: put the Bot User OAuth Token (OAuth & Permissions, xoxb-...) in channel sl's botToken",
  );
  const unreachable = await check({ api: `http://127.0.0.1:${await deadPort()}/api` });
  expect(slackLine(unreachable.lines)).toMatch(/^FAIL {2}channel sl \(slack\): cannot reach Slack at http:\/\/127\.0\.0\.1:\d+\/api \(connection refused\)/);
  const printed = [...refused.lines, ...unreachable.lines].join("\n");
  for (const secret of ["xoxb-9999-wrong-token", BOT_TOKEN, SIGNING_SECRET]) expect(printed).not.toContain(secret);
});
