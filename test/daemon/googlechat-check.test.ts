/**
 * `agent-bridge check` for a Google Chat channel, against the fake Google
 * Chat: the service account key (from the environment or a file) traded for a
 * token at its token endpoint, the Chat API asked with it, and with
 * audience_type app-url the endpoint's health answer; the file route reached
 * through public_base_url (the operator's proxy, here a client that forwards
 * bot.example.com to a server running the channel's real file route). The key
 * never printed.
 */
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fileRoute } from "../../daemon/adapters/file-links/route.js";
import { runCheckCommand } from "../../daemon/check/command.js";
import { type HttpClient, undiciHttp } from "../../daemon/helpers/probe.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeGoogleChat, type FakeGoogleChat } from "../fakes/googlechat.js";
import { deadPort } from "../helpers/emulator.js";
import { type Service, startService, tempDir } from "./daemon-harness.js";

const PROJECT = "112233445566";

let service: Service;
let fake: FakeGoogleChat;
let dir: { path: string; remove(): void };
let count = 0;
/** The bridge's file route behind the operator's proxy: `https://bot.example.com/...` is forwarded here. */
let files: Server;
let http: HttpClient = undiciHttp;

beforeAll(async () => {
  [service, fake] = await Promise.all([startService(), createFakeGoogleChat({ audienceType: "project-number", audience: PROJECT })]);
  dir = tempDir();
});
beforeAll(async () => {
  const route = fileRoute("/googlechat/files", () => undefined, systemClock);
  files = createServer((req, res) => void route.serve(req, res, (req.url ?? "").slice(`${route.prefix}/`.length)));
  await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
  const local = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  http = (url, req) => undiciHttp(url.replace("https://bot.example.com", local), req);
});
afterAll(async () => {
  await new Promise((resolve) => files.close(resolve));
  await Promise.all([service.close(), fake.close()]);
  dir.remove();
});

async function check(channel: Record<string, unknown>, env: Record<string, string> = { GC_KEY: fake.serviceAccountKey }) {
  const file = join(dir.path, `config-${++count}.json`);
  const config = {
    service: { baseUrl: service.url, apiKey: service.key, autoStart: false },
    dataDir: join(dir.path, "data"),
    attachments: { enabled: false },
    routes: [{ match: {}, instance: service.instanceIds[0] }],
    channels: [
      {
        type: "googlechat",
        id: "gc",
        audience_type: "project-number",
        audience: PROJECT,
        serviceAccountKey: "${GC_KEY}",
        api: fake.url,
        certsUrl: fake.certsUrl,
        file_links: { public_base_url: "https://bot.example.com/googlechat/files" },
        ...channel,
      },
    ],
  };
  writeFileSync(file, JSON.stringify(config));
  const lines: string[] = [];
  const code = await runCheckCommand({ configFile: file, env, out: (l) => lines.push(l), timeoutMs: 5_000, http });
  const line = lines.find((l) => l.includes("channel gc (googlechat)")) ?? "";
  return { code, line, printed: lines.join("\n") };
}

const privateKeyLine = (key: string) => (JSON.parse(key) as { private_key: string }).private_key.split("\n")[1] ?? "";

it("passes a key Google accepts, from the environment, with the Chat API answering", async () => {
  const { code, line, printed } = await check({});
  expect(line).toMatch(/^ok {4}channel gc \(googlechat\): key accepted \(agent-bridge@fake-project\.iam\.gserviceaccount\.com\), Chat API answers/);
  expect(code).toBe(0);
  expect(line).toContain("reply files served at https://bot.example.com/googlechat/files/… (reachable)");
  expect(printed).not.toContain(privateKeyLine(fake.serviceAccountKey));
});

it("warns, saying how to fix it, when no public_base_url lets the app send files", async () => {
  const { code, line, printed } = await check({ file_links: {} });
  expect(line).toMatch(/^warn {2}channel gc \(googlechat\): key accepted .*; no file_links\.public_base_url: files the agent makes are not sent/);
  expect(printed).toContain("set file_links.public_base_url to an https URL");
  expect(code).toBe(0);
});

it("reads the key from a file too", async () => {
  const keyFile = join(dir.path, "key.json");
  writeFileSync(keyFile, fake.serviceAccountKey);
  const { line } = await check({ serviceAccountKey: undefined, serviceAccountKeyFile: keyFile }, {});
  expect(line).toMatch(/^ok {4}channel gc \(googlechat\): key accepted/);
});

it("a key Google refuses, a key that is no key, and a missing file, each a failure saying what to do, the key unprinted", async () => {
  const other = JSON.stringify({
    ...(JSON.parse(fake.serviceAccountKey) as object),
    private_key: generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  });
  const refused = await check({}, { GC_KEY: other });
  expect(refused.line).toMatch(/^FAIL {2}channel gc \(googlechat\): Google does not accept the service account key \(invalid_grant\)\. Fix: create a JSON key/);
  expect(refused.printed).not.toContain(privateKeyLine(other));
  const notJson = await check({}, { GC_KEY: "not a key" });
  expect(notJson.line).toBe(
    "FAIL  channel gc (googlechat): the service account key is not JSON. Fix: create a JSON key for the app's service account (IAM → Service accounts → Keys) and name it in serviceAccountKeyFile, or serviceAccountKey as ${VAR}",
  );
  const missing = await check({ serviceAccountKey: undefined, serviceAccountKeyFile: join(dir.path, "nope.json") }, {});
  expect(missing.line).toMatch(/^FAIL {2}channel gc \(googlechat\): cannot read the service account key file .*nope\.json/);
});

it("a Chat API that cannot be reached is a failure naming where", async () => {
  const { line } = await check({ api: `http://127.0.0.1:${await deadPort()}` });
  expect(line).toMatch(/^FAIL {2}channel gc \(googlechat\): cannot reach the Chat API at http:\/\/127\.0\.0\.1:\d+ \(connection refused\)/);
});

it("certificates that cannot be fetched are a failure: no request could be verified", async () => {
  const { line } = await check({ certsUrl: `http://127.0.0.1:${await deadPort()}/certs` });
  expect(line).toMatch(
    /^FAIL {2}channel gc \(googlechat\): cannot fetch the certificates that verify Chat's requests from http:\/\/127\.0\.0\.1:\d+\/certs \(connection refused\)/,
  );
});

it("with audience_type app-url, an endpoint that does not answer is a warning saying where to route it", async () => {
  const { line } = await check({ audience_type: "app-url", audience: `http://127.0.0.1:${await deadPort()}/googlechat/events` });
  expect(line).toMatch(
    /^warn {2}channel gc \(googlechat\): key accepted .*; the endpoint http:\/\/127\.0\.0\.1:\d+\/googlechat\/events does not answer its health check \(connection refused\)\. Fix: start the bridge/,
  );
});
