/**
 * Recordings as files: a hand-broken one is refused naming its file and line,
 * and secrets of real shapes are scrubbed, also when a stream splits one.
 */
import { describe, expect, it } from "vitest";
import { emptyRecording, Recording, recordingText } from "../../emulator/recording/format.js";
import { parseRecordingText } from "../../emulator/recording/read.js";
import { createScrubber, findKeyShaped } from "../../emulator/recording/scrub.js";

// Real-looking, made up for this test.
const ORG_KEY = `svc_org_${"3f9a1c".repeat(10)}beef`;
const OPENAI = "sk-proj-Q7vLm2Xr9TqB4nWc8ZkD1fHj6PsYa3Ue";
const TELEGRAM = "7381942205:AAH4kZt9Qm2VxL8rNp3YwB6cJd1FsEo7GuT";
const ANTHROPIC = "sk-ant-api03-Jx8Kq2Lm9Vn4Bc7Zt1Rw6Yp3Hs5Df0Ga";

describe("the recording file", () => {
  it("round-trips through its text, one field a line", () => {
    const recording = { ...emptyRecording("signup flow", "https://api.example.com") };
    recording.interactions.push({
      request: { method: "POST", path: "/v1/organization/signup", body: { name: "acme" } },
      response: { status: 201, headers: { "content-type": "application/json" }, body: { ok: true } },
    });
    const text = recordingText(recording);
    expect(text.split("\n")).toContain('          "name": "acme"');
    const read = parseRecordingText(text, "rec/signup flow.recording.json");
    expect(read).toEqual({ ok: true, recording: Recording.parse(recording) });
  });

  it("names the file and line of a hand-broken field, and of text that is not JSON", () => {
    const text = recordingText({
      ...emptyRecording("a"),
      interactions: [{ request: { method: "GET", path: "/v1/organization" }, response: { status: 200, headers: {}, body: {} } }],
    }).replace('"status": 200', '"status": "ok"');
    const broken = parseRecordingText(text, "rec/a.recording.json");
    expect(broken.ok).toBe(false);
    if (broken.ok) return;
    const line = text.split("\n").findIndex((l) => l.includes('"status": "ok"')) + 1;
    expect(broken.problems).toEqual([
      { file: "rec/a.recording.json", line, path: "$.interactions[0].response.status", message: "Invalid input: expected number, received string" },
    ]);
    const cut = parseRecordingText('{\n  "format": "agent-bridge-recording",\n  "version": 1,\n  oops\n}', "rec/b.recording.json");
    expect(cut.ok ? undefined : cut.problems[0]).toMatchObject({ file: "rec/b.recording.json", line: 4, path: "$" });
    const unknown = parseRecordingText(recordingText({ ...emptyRecording("c"), extra: 1 } as never), "c.json");
    expect(unknown.ok ? undefined : unknown.problems[0]).toMatchObject({ line: 6, path: "$.extra", message: "unknown field 'extra'" });
  });
});

describe("scrubbing", () => {
  const scrub = createScrubber({ secrets: ["hunter2-configured"] });

  it("finds keys of this service, providers and platforms wherever they appear, and configured values", () => {
    const text = `org ${ORG_KEY}, openai ${OPENAI}, bot ${TELEGRAM}, claude ${ANTHROPIC}, pw hunter2-configured.`;
    expect(findKeyShaped(text).map((f) => f.kind)).toEqual(["service key", "OpenAI key", "Telegram bot token", "Anthropic key"]);
    const clean = scrub.text(text);
    expect(clean).toBe(`org svc_org_${"0".repeat(64)}, openai <redacted>, bot <redacted>, claude <redacted>, pw <redacted>.`);
    expect(findKeyShaped(clean)).toEqual([]);
  });

  it("redacts fields named as secrets whatever their value, and keeps the rest", () => {
    expect(scrub.json({ api_key: ORG_KEY, model_api_keys: { openai: "short" }, name: "acme", note: `use ${OPENAI}` })).toEqual({
      api_key: `svc_org_${"0".repeat(64)}`,
      model_api_keys: { openai: "<redacted>" },
      name: "acme",
      note: "use <redacted>",
    });
  });

  it("finds a secret split across two stream events and cuts each event's share", () => {
    const split = 9;
    const events = [
      { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: `the key is ${OPENAI.slice(0, split)}` },
      { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: `${OPENAI.slice(split)} ok` },
      { type: "response.output_text.done", item_id: "msg_1", output_index: 0, content_index: 0, text: `the key is ${OPENAI} ok` },
    ];
    // Neither half alone is key-shaped: chunk by chunk would miss it.
    expect(findKeyShaped(events[0]!.delta!)).toEqual([]);
    expect(findKeyShaped(events[1]!.delta!)).toEqual([]);
    const out = scrub.events(events) as { delta?: string; text?: string }[];
    expect(out.map((e) => e.delta ?? e.text)).toEqual(["the key is <redacted>", " ok", "the key is <redacted> ok"]);
  });
});
