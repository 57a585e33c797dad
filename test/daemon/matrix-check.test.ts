/**
 * `agent-bridge check` for a Matrix channel, against the fake homeserver: `account/whoami` with
 * the access token says whether it is accepted and whose it is; an unreachable homeserver is named.
 * The token is never printed.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCheckCommand } from "../../daemon/check/command.js";
import { createFakeMatrix, type FakeMatrix } from "../fakes/matrix.js";
import { deadPort } from "../helpers/emulator.js";
import { type Service, startService, tempDir } from "./daemon-harness.js";

let service: Service;
let fake: FakeMatrix;
let bot: { userId: string; token: string };
let other: { userId: string; token: string };
let dir: { path: string; remove(): void };
let count = 0;

beforeAll(async () => {
  [service, fake] = await Promise.all([startService(), createFakeMatrix()]);
  bot = fake.register("bridgebot");
  other = fake.register("someoneelse");
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
    channels: [{ type: "matrix", id: "mx", homeserver: fake.url, user_id: bot.userId, access_token: bot.token, access: { users: ["@a:b"] }, ...channel }],
  };
  writeFileSync(file, JSON.stringify(config));
  const lines: string[] = [];
  const code = await runCheckCommand({ configFile: file, env: {}, out: (l) => lines.push(l), timeoutMs: 5_000 });
  return { code, line: lines.find((l) => l.includes("channel mx (matrix)")) ?? "", all: lines.join("\n") };
}

it("passes a token the homeserver accepts for the configured user", async () => {
  const { code, line } = await check({});
  expect(line).toBe("ok    channel mx (matrix): access token accepted (@bridgebot:fake.test)");
  expect(code).toBe(0);
});

it("fails a token the homeserver does not know, or one of another user, saying what to do, never printing it", async () => {
  const unknown = await check({ access_token: "syt_not_a_token_the_server_knows" });
  expect(unknown.line).toMatch(
    /^FAIL {2}channel mx \(matrix\): the homeserver does not accept the access token \(401 M_UNKNOWN_TOKEN\)\. Fix: log the bot user in again/,
  );
  expect(unknown.code).not.toBe(0);
  expect(unknown.all).not.toContain("syt_not_a_token_the_server_knows");
  const foreign = await check({ access_token: other.token });
  expect(foreign.line).toContain("the access token belongs to @someoneelse:fake.test, not to @bridgebot:fake.test");
  expect(foreign.all).not.toContain(other.token);
});

it("names a homeserver it cannot reach", async () => {
  const { line } = await check({ homeserver: `http://127.0.0.1:${await deadPort()}` });
  expect(line).toMatch(/^FAIL {2}channel mx \(matrix\): cannot reach the homeserver at http:\/\/127\.0\.0\.1:\d+ /);
});
