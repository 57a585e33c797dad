/**
 * Transcription's engines and limits against a real HTTP endpoint (OpenAI's
 * form, test/fakes/transcription-endpoint.ts) and a real child process
 * (test/fakes/transcribe-command.mjs): answers, failures, timeouts on the
 * injected clock, files over the limits (never sent), transcripts cut.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import type { TranscriptionConfig } from "../../../daemon/config/schema.js";
import { commandLine } from "../../../daemon/transcription/local-command.js";
import { createTranscriber, cutTranscript, engineFor, transcriptionFor } from "../../../daemon/transcription/transcriber.js";
import { createManualClock } from "../../../shared/clock.js";
import { createFakeTranscriptionEndpoint, type FakeTranscriptionEndpoint } from "../../fakes/transcription-endpoint.js";
import { waitUntil } from "../../helpers/wait.js";

const FAKE_COMMAND = join(import.meta.dirname, "../../fakes/transcribe-command.mjs");
const limits = { maxBytes: 1000, maxSeconds: 60, maxChars: 50, timeoutMs: 5000 };
const audio = (text: string, seconds?: number) => ({
  fileName: "voice-7.ogg",
  mimeType: "audio/ogg",
  data: Buffer.from(text),
  ...(seconds !== undefined ? { seconds } : {}),
});
const never = new AbortController().signal;

describe("an OpenAI-compatible endpoint", () => {
  let endpoint: FakeTranscriptionEndpoint;
  beforeAll(async () => {
    endpoint = await createFakeTranscriptionEndpoint();
  });
  afterAll(() => endpoint.close());
  afterEach(() => {
    endpoint.requests.length = 0;
    endpoint.answer = (request) => ({ text: request.data.toString("utf8") });
  });
  const settings = (over: Partial<TranscriptionConfig> = {}): TranscriptionConfig =>
    ({ kind: "openai", url: endpoint.url, apiKey: "sk-voice-secret", model: "whisper-1", language: "de", ...limits, ...over }) as TranscriptionConfig;
  const transcriber = (clock = createManualClock(), over: Partial<TranscriptionConfig> = {}) => {
    const s = settings(over);
    return createTranscriber(s, engineFor(s), clock);
  };

  it("posts the audio with the key, model and language, and hands back the text", async () => {
    expect(await transcriber().transcribe(audio("  book the table for eight  "), never)).toEqual({ ok: true, text: "book the table for eight", cut: false });
    const [request] = endpoint.requests;
    expect(request).toMatchObject({ authorization: "Bearer sk-voice-secret", fileName: "voice-7.ogg", mimeType: "audio/ogg" });
    expect(request!.fields).toEqual({ model: "whisper-1", response_format: "json", language: "de" });
  });

  it("takes a URL already ending in /audio/transcriptions as it is, and sends no key when none is set", async () => {
    const t = transcriber(createManualClock(), { url: `${endpoint.url}/audio/transcriptions`, apiKey: undefined });
    expect(await t.transcribe(audio("hello"), never)).toMatchObject({ ok: true, text: "hello" });
    expect(endpoint.requests[0]!.authorization).toBeUndefined();
  });

  it("cuts a transcript longer than maxChars, and says so", async () => {
    endpoint.answer = () => ({ text: "word ".repeat(100) });
    const result = await transcriber().transcribe(audio("x"), never);
    expect(result).toMatchObject({ ok: true, cut: true });
    expect(result.ok && Array.from(result.text).length).toBeLessThanOrEqual(50);
  });

  it("reports an HTTP error as a failure naming the status, never the key", async () => {
    endpoint.answer = () => ({ status: 500 });
    const result = await transcriber().transcribe(audio("x"), never);
    expect(result).toMatchObject({ ok: false, reason: "failed" });
    expect(!result.ok && result.detail).toContain("HTTP 500");
    expect(JSON.stringify(result)).not.toContain("sk-voice-secret");
  });

  it("gives up after timeoutMs on its clock and closes the request", async () => {
    endpoint.answer = () => ({ hang: true });
    const clock = createManualClock();
    const pending = transcriber(clock).transcribe(audio("x"), never);
    await waitUntil(() => endpoint.requests.length === 1, "the request to arrive");
    clock.advance(4999);
    expect(endpoint.abandoned()).toBe(0);
    clock.advance(1);
    expect(await pending).toMatchObject({ ok: false, reason: "timeout" });
    await waitUntil(() => endpoint.abandoned() === 1, "the endpoint to see the client leave");
  });

  it("sends nothing for a file over maxBytes or a voice note over maxSeconds", async () => {
    expect(await transcriber().transcribe(audio("x".repeat(1001)), never)).toEqual({ ok: false, reason: "too_large" });
    expect(await transcriber().transcribe(audio("short", 61), never)).toEqual({ ok: false, reason: "too_long" });
    expect(await transcriber().transcribe(audio("short", 60), never)).toMatchObject({ ok: true });
    expect(endpoint.requests).toHaveLength(1);
  });

  it("calls silence empty, and an endpoint it cannot reach a failure", async () => {
    endpoint.answer = () => ({ text: " \n " });
    expect(await transcriber().transcribe(audio("x"), never)).toEqual({ ok: false, reason: "empty" });
    const gone = transcriber(createManualClock(), { url: "http://127.0.0.1:1/v1" });
    expect(await gone.transcribe(audio("x"), never)).toMatchObject({ ok: false, reason: "failed" });
  });
});

describe("a local command", () => {
  const dir = mkdtempSync(join(tmpdir(), "transcribe-test-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const transcriber = (clock = createManualClock(), command = [process.execPath, FAKE_COMMAND, "{file}"]) => {
    const s = { kind: "command", command, ...limits } as TranscriptionConfig;
    return createTranscriber(s, engineFor(s), clock);
  };

  it("puts the file's path where {file} is, or last", () => {
    expect(commandLine(["whisper-cli", "-f", "{file}", "-nt"], "/t/a.ogg")).toEqual(["whisper-cli", "-f", "/t/a.ogg", "-nt"]);
    expect(commandLine(["transcribe", "--quiet"], "/t/a.ogg")).toEqual(["transcribe", "--quiet", "/t/a.ogg"]);
  });

  it("hands back what the program prints (the path last when no argument names it)", async () => {
    expect(await transcriber(createManualClock(), [process.execPath, FAKE_COMMAND]).transcribe(audio("call mum\n"), never)).toEqual({
      ok: true,
      text: "call mum",
      cut: false,
    });
    expect(await transcriber().transcribe(audio("!repeat 30 abc "), never)).toMatchObject({ ok: true, cut: true });
  });

  it("reports a non-zero exit, or a program that is not there, as a failure", async () => {
    const failed = await transcriber().transcribe(audio("!exit 3"), never);
    expect(failed).toMatchObject({ ok: false, reason: "failed" });
    expect(!failed.ok && failed.detail).toContain("exited with 3");
    expect(await transcriber(createManualClock(), [join(dir, "no-such-program")]).transcribe(audio("x"), never)).toMatchObject({ ok: false, reason: "failed" });
  });

  it("kills a program that runs past timeoutMs", async () => {
    const started = join(dir, "started");
    const clock = createManualClock();
    const pending = transcriber(clock, [process.execPath, FAKE_COMMAND, "--started", started, "{file}"]).transcribe(audio("!hang"), never);
    const pid = Number(await waitUntil(() => existsSync(started) && readFileSync(started, "utf8"), "the program to start"));
    clock.advance(5000);
    expect(await pending).toMatchObject({ ok: false, reason: "timeout" });
    expect(() => process.kill(pid, 0)).toThrow(); // gone
  });

  it("runs nothing for a file over the limit", async () => {
    expect(await transcriber(createManualClock(), [join(dir, "no-such-program")]).transcribe(audio("x".repeat(1001)), never)).toEqual({
      ok: false,
      reason: "too_large",
    });
  });
});

describe("the setting that applies", () => {
  const base = { service: { apiKey: "svc_org_x" }, routes: [{ instance: "i" }] };
  const tg = { type: "telegram", token: "123:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi", access: { users: ["1"] } };

  it("is the channel's own, else the top-level one; false turns it off on a channel", () => {
    const config = parseConfig({
      ...base,
      transcription: { kind: "command", command: ["whisper-cli"] },
      channels: [tg, { ...tg, id: "own", transcription: { kind: "openai", url: "http://127.0.0.1:9/v1" } }, { ...tg, id: "off", transcription: false }],
    });
    const [inherits, own, off] = config.channels;
    expect(transcriptionFor(config, inherits)).toMatchObject({ kind: "command", maxBytes: 25 * 1024 * 1024, timeoutMs: 60_000 });
    expect(transcriptionFor(config, own)).toMatchObject({ kind: "openai", model: "whisper-1" });
    expect(transcriptionFor(config, off)).toBeUndefined();
  });

  it("refuses a bad setting with the key's path", () => {
    expect(() => parseConfig({ ...base, transcription: { kind: "openai", url: "ftp://x", language: "German" } })).toThrow(
      /transcription\.url[\s\S]*transcription\.language/,
    );
    expect(() => parseConfig({ ...base, transcription: { kind: "command", command: [] } })).toThrow(/transcription\.command: must name the program/);
  });

  it("cuts by code points, never inside one", () => {
    expect(cutTranscript("🎤🎤🎤", 2)).toEqual({ ok: true, text: "🎤🎤", cut: true });
    expect(cutTranscript("  ", 2)).toEqual({ ok: false, reason: "empty" });
  });
});
