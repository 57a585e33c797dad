/**
 * `agent-bridge check` for a Teams channel, against the fake Teams: the app
 * id and password tried at the token endpoint, the OpenID metadata and its
 * keys read, the anonymous mode warned about. The password is never printed.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCheckCommand } from "../../daemon/check/command.js";
import { createFakeTeams, type FakeTeams } from "../fakes/teams.js";
import { startService, type Service, tempDir } from "./daemon-harness.js";

const APP_ID = "00000000-0000-4000-8000-000000000b01";
const APP_PASSWORD = "check~TeamsPasswordSecret";
const TENANT = "11111111-1111-4111-8111-111111111111";

let service: Service;
let fake: FakeTeams;
let dir: { path: string; remove(): void };
let count = 0;

beforeAll(async () => {
  [service, fake] = await Promise.all([startService(), createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT })]);
  dir = tempDir();
});
afterAll(async () => {
  await Promise.all([service.close(), fake.close()]);
  dir.remove();
});

async function check(channel: Record<string, unknown>): Promise<{ code: number; line: string; all: string }> {
  const file = join(dir.path, `config-${++count}.json`);
  const config = {
    service: { baseUrl: service.url, apiKey: service.key, autoStart: false },
    dataDir: join(dir.path, "data"),
    attachments: { enabled: false },
    routes: [{ match: {}, instance: service.instanceIds[0] }],
    channels: [
      { type: "teams", id: "tm", app_id: APP_ID, tenant_id: TENANT, openIdMetadata: fake.openIdMetadata, tokenEndpoint: fake.tokenEndpoint, ...channel },
    ],
  };
  writeFileSync(file, JSON.stringify(config));
  const lines: string[] = [];
  const code = await runCheckCommand({ configFile: file, env: {}, out: (l) => lines.push(l), timeoutMs: 5_000 });
  return { code, line: lines.find((l) => l.includes("channel tm (teams)")) ?? "", all: lines.join("\n") };
}

it("passes an app id and password the token endpoint accepts, with the signing keys readable", async () => {
  const { line, all } = await check({ app_password: APP_PASSWORD });
  expect(line).toMatch(/OK/i);
  expect(line).toContain("accepted");
  expect(all).not.toContain(APP_PASSWORD);
});

it("fails a password the token endpoint refuses, saying where a new one comes from, without printing it", async () => {
  const { code, line, all } = await check({ app_password: "wrong~password123" });
  expect(code).not.toBe(0);
  expect(line).toContain("does not accept the app id and password");
  expect(all).toContain("Certificates & secrets");
  expect(all).not.toContain("wrong~password123");
});

it("fails when the OpenID metadata cannot be read", async () => {
  const { code, line } = await check({ app_password: APP_PASSWORD, openIdMetadata: `${fake.openIdMetadata}-missing` });
  expect(code).not.toBe(0);
  expect(line).toContain("cannot read the OpenID metadata");
});

it("warns about the anonymous mode", async () => {
  const { line } = await check({ auth: "anonymous-local-tools-only" });
  expect(line).toMatch(/WARN/i);
  expect(line).toContain("anonymous mode");
});
