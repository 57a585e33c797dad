/**
 * The commands as processes: `proxy` (help, `--fail-on-drift` exit code and
 * reports at shutdown), `recordings check` (a key in clear or a broken file
 * named by file and line, never the key), `emulator --replay` refusing a
 * broken recording, and the HAR commands' round trip.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyRecording, recordingText } from "../../emulator/recording/format.js";
import { runAgentBridge, runCli, stopCli } from "../helpers/cli.js";
import { startDriftingUpstream, type DriftingUpstream } from "../helpers/drifting-upstream.js";
import { signupOrg, startEmulator, tempDir, type TestEmulator } from "../helpers/emulator.js";

const KEY = "sk-ant-api03-Jx8Kq2Lm9Vn4Bc7Zt1Rw6Yp3Hs5Df0Ga";
const dir = tempDir();
let upstream: TestEmulator;
let standIn: DriftingUpstream;

beforeAll(async () => {
  upstream = await startEmulator();
  standIn = await startDriftingUpstream(await upstream.emulator.listen(0, "127.0.0.1"), { subscriptionStatus: 202 });
});
afterAll(async () => {
  await standIn?.close();
  await upstream?.close();
  dir.remove();
});

/** Resolves once the process printed a line matching `re`. */
function waitFor(run: ReturnType<typeof runAgentBridge>, re: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = re.exec(run.stdout());
      if (m) resolve(m);
    };
    run.child.stdout!.on("data", check);
    void run.exited.then((code) => reject(new Error(`exited ${code}: ${run.stdout()} ${run.stderr()}`)));
  });
}

describe("agent-bridge proxy", () => {
  it("describes its port, host and options", async () => {
    const run = runAgentBridge(["proxy", "--help"]);
    expect(await run.exited).toBe(0);
    for (const option of [
      "--upstream <url>",
      "--port <port>",
      "--host <host>",
      "--record <dir>",
      "--secret <value>",
      "--report <file>",
      "--junit <file>",
      "--fail-on-drift",
    ]) {
      expect(run.stdout()).toContain(option);
    }
  });

  it("exits 1 at shutdown with --fail-on-drift when something drifted, after writing its reports", async () => {
    const report = join(dir.path, "drift.json");
    const junit = join(dir.path, "drift.xml");
    const run = runAgentBridge(["proxy", "--upstream", standIn.url, "--port", "0", "--report", report, "--junit", junit, "--fail-on-drift"]);
    const url = (await waitFor(run, /proxy listening on (http:\/\/\S+)/))[1]!;
    const org = await signupOrg(upstream.app);
    const res = await fetch(`${url}/v1/subscription`, { headers: org.auth });
    expect(res.status).toBe(202);
    // The report endpoint answers once every answer already sent is judged.
    expect(((await (await fetch(`${url}/_proxy/report`)).json()) as { drift_count: number }).drift_count).toBe(1);
    expect(await stopCli(run, "SIGTERM")).toBe(1);
    expect(run.stdout()).toContain("GET /v1/subscription");
    expect(run.stdout()).toContain("status: status: expected 200, 401, 403, got 202");
    expect((JSON.parse(readFileSync(report, "utf8")) as { drift_count: number }).drift_count).toBe(1);
    expect(readFileSync(junit, "utf8")).toContain('failures="1"');
  });
});

describe("agent-bridge recordings", () => {
  it("check fails on a key in clear, naming file, line and kind but never the key", async () => {
    const recordings = join(dir.path, "leaky");
    const file = join(recordings, "a.recording.json");
    const text = recordingText({
      ...emptyRecording("a"),
      interactions: [{ request: { method: "GET", path: "/v1/organization" }, response: { status: 200, headers: {}, body: { note: `key ${KEY}` } } }],
    });
    await import("node:fs/promises").then((fs) => fs.mkdir(recordings, { recursive: true }));
    writeFileSync(file, text);
    writeFileSync(join(recordings, "b.recording.json"), '{\n  "format": "agent-bridge-recording",\n  oops\n}\n');
    const run = runAgentBridge(["recordings", "check", recordings]);
    expect(await run.exited).toBe(1);
    const line = text.split("\n").findIndex((l) => l.includes(KEY)) + 1;
    expect(run.stderr()).toContain(`${file}:${line}: holds a Anthropic key in clear`);
    expect(run.stderr()).toContain(`${join(recordings, "b.recording.json")}:3: not valid JSON`);
    expect(run.stderr()).not.toContain(KEY.slice(8));
  });

  it("emulator --replay and proxy --record refuse a broken recording, naming file and line", async () => {
    const recordings = join(dir.path, "broken");
    await import("node:fs/promises").then((fs) => fs.mkdir(recordings, { recursive: true }));
    const text = recordingText({ ...emptyRecording("x"), interactions: [] }).replace('"version": 1', '"version": 7');
    writeFileSync(join(recordings, "x.recording.json"), text);
    const run = runCli(["--port", "0", "--in-memory", "--replay", recordings]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`${join(recordings, "x.recording.json")}:3: $.version: Invalid input: expected 1`);
    // The proxy will not append to it either, and leaves it as it was.
    const proxy = runAgentBridge(["proxy", "--upstream", standIn.url, "--port", "0", "--record", recordings]);
    expect(await proxy.exited).toBe(1);
    expect(proxy.stderr()).toContain(`${join(recordings, "x.recording.json")}:3: $.version`);
    expect(readFileSync(join(recordings, "x.recording.json"), "utf8")).toBe(text);
  });

  it("export-har and import-har round-trip a recording", async () => {
    const recordings = join(dir.path, "har");
    await import("node:fs/promises").then((fs) => fs.mkdir(recordings, { recursive: true }));
    const source = join(recordings, "src.recording.json");
    writeFileSync(
      source,
      recordingText({
        ...emptyRecording("src", "https://api.example.com"),
        interactions: [{ request: { method: "GET", path: "/v1/keys" }, response: { status: 200, headers: { "content-type": "application/json" }, body: [] } }],
      }),
    );
    const har = join(dir.path, "src.har");
    const exported = runAgentBridge(["recordings", "export-har", source, "--out", har]);
    expect(await exported.exited).toBe(0);
    const imported = runAgentBridge(["recordings", "import-har", har, "--into", recordings, "--name", "copy"]);
    expect(await imported.exited).toBe(0);
    expect(imported.stdout()).toContain("1 entries appended");
    const copy = JSON.parse(readFileSync(join(recordings, "copy.recording.json"), "utf8")) as { interactions: unknown[] };
    const original = JSON.parse(readFileSync(source, "utf8")) as { interactions: unknown[] };
    expect(copy.interactions).toEqual(original.interactions.map((i) => ({ ...(i as object), recorded_at: expect.any(String), duration_ms: 0 })));
  });
});
