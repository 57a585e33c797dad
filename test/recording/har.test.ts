/**
 * HAR 1.2: a recording exports as a log other tools read (a stream as its
 * event text, with times kept), imports back to the same interactions, and
 * a HAR captured elsewhere is scrubbed and keeps only `/v1` entries.
 */
import { describe, expect, it } from "vitest";
import { emptyRecording, Recording } from "../../emulator/recording/format.js";
import { HarLog, harToInteractions, recordingToHar } from "../../emulator/recording/har.js";
import { createScrubber } from "../../emulator/recording/scrub.js";

const recording = Recording.parse({
  ...emptyRecording("har", "https://api.example.com"),
  interactions: [
    {
      request: { method: "GET", path: "/v1/instances/i-1/files", query: { path: "docs" }, headers: { accept: "application/json" } },
      response: { status: 200, headers: { "content-type": "application/json" }, body: { path: "docs", entries: [] } },
      recorded_at: "2026-01-01T00:00:00.000Z",
      duration_ms: 12,
    },
    {
      request: {
        method: "POST",
        path: "/v1/instances/i-1/responses",
        headers: { "content-type": "application/json" },
        body: { model: "m", input: "hi", stream: true },
      },
      response: {
        status: 200,
        headers: { "content-type": "text/event-stream; charset=utf-8" },
        events: [
          { at_ms: 0, event: "response.created", data: { type: "response.created", sequence_number: 0 } },
          { at_ms: 40, event: "response.completed", data: { type: "response.completed", sequence_number: 1 } },
        ],
      },
      recorded_at: "2026-01-01T00:00:01.000Z",
      duration_ms: 45,
    },
    {
      request: { method: "GET", path: "/v1/instances/i-1/files/download", query: { path: "a.bin" } },
      response: { status: 200, headers: { "content-type": "application/octet-stream" }, body_base64: Buffer.from([0, 1, 2, 255]).toString("base64") },
      recorded_at: "2026-01-01T00:00:02.000Z",
      duration_ms: 3,
    },
  ],
});

describe("HAR", () => {
  it("exports a recording as HAR 1.2 and imports it back unchanged", () => {
    const har = recordingToHar(recording);
    const log = HarLog.parse(JSON.parse(JSON.stringify(har)));
    expect(log.log.version).toBe("1.2");
    expect(log.log.entries[0]!.request.url).toBe("https://api.example.com/v1/instances/i-1/files?path=docs");
    expect(log.log.entries[1]!.response.content.text).toBe(
      'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\nevent: response.completed\ndata: {"type":"response.completed","sequence_number":1}\n\n',
    );
    expect(log.log.entries[2]!.response.content).toMatchObject({ encoding: "base64", size: 4 });
    const back = harToInteractions(log, createScrubber());
    expect(back.skipped).toBe(0);
    expect(back.interactions).toEqual(recording.interactions);
  });

  it("imports traffic captured elsewhere: /v1 only, scrubbed, a stream's events at 0 ms", () => {
    const key = `svc_org_${"ab12".repeat(16)}`;
    const har = HarLog.parse({
      log: {
        version: "1.2",
        entries: [
          {
            startedDateTime: "2026-01-01T00:00:00.000Z",
            request: { method: "GET", url: "https://api.example.com/favicon.ico", headers: [] },
            response: { status: 200, headers: [], content: { mimeType: "image/x-icon" } },
          },
          {
            startedDateTime: "2026-01-01T00:00:00.000Z",
            time: 5,
            request: {
              method: "POST",
              url: "https://api.example.com/v1/organization/signup",
              headers: [
                { name: "Authorization", value: "Bearer secret" },
                { name: "Content-Type", value: "application/json" },
              ],
              postData: { mimeType: "application/json", text: '{"name":"acme"}' },
            },
            response: { status: 201, headers: [{ name: "Content-Type", value: "application/json" }], content: { text: JSON.stringify({ api_key: key }) } },
          },
          {
            startedDateTime: "2026-01-01T00:00:00.000Z",
            request: { method: "POST", url: "https://api.example.com/v1/instances/x/responses", headers: [] },
            response: { status: 200, headers: [{ name: "content-type", value: "text/event-stream" }], content: { text: 'event: a\ndata: {"x":1}\n\n' } },
          },
        ],
      },
    });
    const { interactions, skipped } = harToInteractions(har, createScrubber());
    expect(skipped).toBe(1);
    expect(interactions[0]!.request).toEqual({
      method: "POST",
      path: "/v1/organization/signup",
      headers: { "content-type": "application/json" },
      body: { name: "acme" },
    });
    expect(interactions[0]!.response.body).toEqual({ api_key: `svc_org_${"0".repeat(64)}` });
    expect(interactions[1]!.response.events).toEqual([{ at_ms: 0, event: "a", data: { x: 1 } }]);
  });
});
