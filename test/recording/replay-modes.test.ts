/**
 * Replay's modes and its test helpers: `useRecording(name)` replays a test's
 * own recording through its sandbox; `passthrough` hands misses to the
 * emulator; `record-if-missing` fetches a miss from the upstream once and
 * appends it; a hand-broken recording stops the start naming file and line;
 * the run's report names the recordings nobody used.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEmulator } from "../../emulator/index.js";
import { emptyRecording, type RecordingInput, RECORDING_HEADER, recordingFileName, recordingText } from "../../emulator/recording/format.js";
import { defaultReplayMode, REPLAY_HEADER } from "../../emulator/recording/replay.js";
import { recordingUsage, unusedRecordingsReport } from "../../testing/recordings.js";
import { useRecording } from "../../testing/vitest.js";
import { bearer, signupOrg, startEmulator, tempDir } from "../helpers/emulator.js";

const dir = tempDir();
const ORG = { id: "6b0c6a56-3a3f-4d43-9a57-0f1d8f3e3b1a", name: "recorded org" };
const write = (recording: RecordingInput) => writeFileSync(join(dir.path, recordingFileName(recording.name)), recordingText(recording));
write({
  ...emptyRecording("checkout"),
  interactions: [
    { request: { method: "GET", path: "/v1/organization" }, response: { status: 200, headers: { "content-type": "application/json" }, body: ORG } },
    {
      request: { method: "GET", path: "/v1/subscription" },
      response: { status: 200, headers: { "content-type": "application/json" }, body: { tier: "crab" } },
    },
  ],
});
write({
  ...emptyRecording("never used"),
  interactions: [{ request: { method: "GET", path: "/v1/keys" }, response: { status: 200, headers: { "content-type": "application/json" }, body: [] } }],
});

const emulator = await createEmulator({ replay: { dir: dir.path, mode: "strict", pace: false } });
const url = await emulator.listen(0, "127.0.0.1");
afterAll(async () => {
  await emulator.close();
  dir.remove();
});

describe("useRecording", () => {
  const recording = useRecording("checkout", { url });

  it("answers the test's requests from its recording, through its sandbox's key", async () => {
    const res = await fetch(`${url}/v1/organization`, { headers: bearer(recording().apiKey) });
    expect(res.headers.get(REPLAY_HEADER)).toBe("checkout#1");
    expect(await res.json()).toEqual(ORG);
    expect(recording.headers).toEqual({ [RECORDING_HEADER]: "checkout" });
    // Journaled under its operation, as the sandbox matchers read it.
    expect(await recording().count({ route: "getOrganization", status: 200 })).toBe(1);
  });

  it("reports what no test used", async () => {
    const usage = await recordingUsage(url);
    expect(usage.map((u) => [u.name, u.used, u.unused])).toEqual([
      ["checkout", 1, [2]],
      ["never used", 0, [1]],
    ]);
    const report = unusedRecordingsReport(usage);
    expect(report).toContain(`never used (${join(dir.path, "never used.recording.json")}): no test used it`);
    expect(report).toContain("checkout");
    expect(report).toContain("request(s) #2 of 2 never replayed");
  });
});

describe("modes", () => {
  it("replays strictly under CI=true unless told otherwise", () => {
    expect(defaultReplayMode("http://up", { CI: "true" })).toBe("strict");
    expect(defaultReplayMode("http://up", {})).toBe("record-if-missing");
    expect(defaultReplayMode(undefined, {})).toBe("passthrough");
  });

  it("passthrough: a request with no recording is the emulator's own", async () => {
    const own = await createEmulator({ replay: { dir: dir.path, mode: "passthrough" }, provisionMs: 0 });
    try {
      const org = await signupOrg(own.app, { name: "live" });
      const base = await own.listen(0, "127.0.0.1");
      const live = await fetch(`${base}/v1/organization`, { headers: org.auth });
      expect(live.headers.get(REPLAY_HEADER)).toBeNull();
      expect(((await live.json()) as { name: string }).name).toBe("live");
      const replayed = await fetch(`${base}/v1/organization`, { headers: { ...org.auth, [RECORDING_HEADER]: "checkout" } });
      expect(await replayed.json()).toEqual(ORG);
    } finally {
      await own.close();
    }
  });

  it("record-if-missing: fetches a miss from the upstream once, appends it, then replays it", async () => {
    const upstream = await startEmulator({ provisionMs: 0 });
    const recordings = tempDir();
    try {
      const upstreamUrl = await upstream.emulator.listen(0, "127.0.0.1");
      const org = await signupOrg(upstream.app, { name: "upstream org" });
      const replayer = await createEmulator({ replay: { dir: recordings.path, mode: "record-if-missing", upstream: upstreamUrl } });
      try {
        const base = await replayer.listen(0, "127.0.0.1");
        const headers = { ...org.auth, [RECORDING_HEADER]: "fresh" };
        const first = await fetch(`${base}/v1/organization`, { headers });
        expect(first.headers.get(REPLAY_HEADER)).toBeNull();
        expect(((await first.json()) as { name: string }).name).toBe("upstream org");
        const file = join(recordings.path, "fresh.recording.json");
        const written = JSON.parse(readFileSync(file, "utf8")) as { upstream: string; interactions: { request: { path: string } }[] };
        expect(written.upstream).toBe(upstreamUrl);
        expect(written.interactions.map((i) => i.request.path)).toEqual(["/v1/organization"]);
        // A body goes upstream as the client sent it.
        const renamed = await fetch(`${base}/v1/organization`, {
          method: "PATCH",
          headers: { ...headers, "content-type": "application/json" },
          body: '{"name":"renamed org"}',
        });
        expect(((await renamed.json()) as { name: string }).name).toBe("renamed org");
        expect(readFileSync(file, "utf8")).not.toContain(org.apiKey);
        await upstream.close();
        const again = await fetch(`${base}/v1/organization`, { headers });
        expect(again.headers.get(REPLAY_HEADER)).toBe("fresh#1");
        expect(((await again.json()) as { name: string }).name).toBe("upstream org");
        const gone = await fetch(`${base}/v1/subscription`, { headers });
        expect(gone.status).toBe(502);
        expect(gone.headers.get(REPLAY_HEADER)).toBe("upstream-unreachable");
      } finally {
        await replayer.close();
      }
    } finally {
      await upstream.close();
      recordings.remove();
    }
  });

  it("matches a request whose secrets were redacted in the recording, whatever secret is sent now", async () => {
    const own = tempDir();
    try {
      writeFileSync(
        join(own.path, recordingFileName("keys")),
        recordingText({
          ...emptyRecording("keys"),
          interactions: [
            {
              request: {
                method: "PATCH",
                path: "/v1/organization",
                headers: { "content-type": "application/json" },
                body: { name: "team <redacted>", model_api_keys: { openai: "<redacted>" } },
              },
              response: { status: 200, headers: { "content-type": "application/json" }, body: ORG },
            },
          ],
        }),
      );
      const replayer = await createEmulator({ replay: { dir: own.path, mode: "strict" } });
      try {
        const base = await replayer.listen(0, "127.0.0.1");
        const send = (body: unknown) =>
          fetch(`${base}/v1/organization`, {
            method: "PATCH",
            headers: { "content-type": "application/json", [RECORDING_HEADER]: "keys" },
            body: JSON.stringify(body),
          });
        const hit = await send({ model_api_keys: { openai: "sk-proj-Another9Key8That7Is6Real5Looking" }, name: "team hunter-22" });
        expect(hit.headers.get(REPLAY_HEADER)).toBe("keys#1");
        const miss = await send({ model_api_keys: { openai: "x", anthropic: "y" }, name: "team a" });
        expect(miss.status).toBe(404);
      } finally {
        await replayer.close();
      }
    } finally {
      own.remove();
    }
  });

  it("refuses to start on a hand-broken recording, naming file and line", async () => {
    const broken = tempDir();
    try {
      const text = recordingText({
        ...emptyRecording("broken"),
        interactions: [{ request: { method: "GET", path: "/v1/organization" }, response: { status: 200, headers: {} } }],
      }).replace('"method": "GET"', '"method": "FETCH"');
      writeFileSync(join(broken.path, "broken.recording.json"), text);
      const line = text.split("\n").findIndex((l) => l.includes("FETCH")) + 1;
      await expect(createEmulator({ replay: { dir: broken.path, mode: "strict" } })).rejects.toThrow(
        `${join(broken.path, "broken.recording.json")}:${line}: $.interactions[0].request.method: Invalid option`,
      );
    } finally {
      broken.remove();
    }
  });
});
