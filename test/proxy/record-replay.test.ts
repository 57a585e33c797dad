/**
 * Record once through the proxy, replay with the upstream gone: the typed
 * client and the official `openai` SDK, streamed and not, see the same
 * bodies. Secrets never reach the recording (one split across two stream
 * events), and a request nobody recorded gets a strict replay's 404 naming
 * the closest recorded request.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmulator, type Emulator } from "../../emulator/index.js";
import { DEFAULT_RECORDING, RECORDING_HEADER, recordingFileName } from "../../emulator/recording/format.js";
import { REPLAY_HEADER } from "../../emulator/recording/replay.js";
import { findKeyShaped } from "../../emulator/recording/scrub.js";
import { createValidatingProxy } from "../../emulator/proxy/server.js";
import { createServiceClient, type ResponseStreamEvent } from "../../shared/client/index.js";
import { outputTextOf } from "../../shared/schemas/responses.js";
import { type CliRun, runAgentBridge, startCli, stopCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/emulator.js";

// Real-looking, made up for this test.
const OPENAI_KEY = "sk-proj-Q7vLm2Xr9TqB4nWc8ZkD1fHj6PsYa3Ue";
const TELEGRAM_TOKEN = "7381942205:AAH4kZt9Qm2VxL8rNp3YwB6cJd1FsEo7GuT";
const CONFIGURED = "acme-internal-secret-42";
// The fake model streams 64-character deltas: the key straddles the first boundary.
const LEAKY_TEXT = `${"x".repeat(50)} ${OPENAI_KEY} and that is all.`;

const dir = tempDir();
let upstream: CliRun & { url: string };

beforeAll(async () => {
  const script = join(dir.path, "script.json");
  writeFileSync(script, JSON.stringify({ rules: [{ match: { input: "leak" }, answer: { text: LEAKY_TEXT } }] }));
  upstream = await startCli(["--port", "0", "--in-memory", "--provision-ms", "0", "--model-script", script]);
});
afterAll(async () => {
  if (upstream) await stopCli(upstream);
  dir.remove();
});

interface Seen {
  organization: unknown;
  instance: unknown;
  typed: unknown;
  typedStream: ResponseStreamEvent[];
  sdk: unknown;
  sdkStream: unknown[];
}

/** What a suite does: signup by hand, then the typed client and the SDK, streamed and not. */
async function suite(base: string): Promise<Seen> {
  const signup = (await (
    await fetch(`${base}/v1/organization/signup`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"acme"}' })
  ).json()) as { api_key: string };
  const api = createServiceClient({ baseUrl: base, apiKey: signup.api_key });
  await api.updateOrganization({ body: { model_api_keys: { openai: OPENAI_KEY } } });
  const organization = await api.getOrganization();
  const instance = await api.createInstance({ body: { name: "agent", model_provider: "openai" } });
  const typed = await api.createResponse({ instance_id: instance.id, body: { model: "m", input: "hello" } });
  const typedStream: ResponseStreamEvent[] = [];
  for await (const event of api.streamResponse({ instance_id: instance.id, body: { model: "m", input: "leak" } })) typedStream.push(event);
  const sdkClient = new OpenAI({ apiKey: signup.api_key, baseURL: `${base}/v1/instances/${instance.id}`, maxRetries: 0 });
  const sdk = await sdkClient.responses.create({ model: "m", input: "hello sdk" });
  const sdkStream: unknown[] = [];
  for await (const event of await sdkClient.responses.create({ model: "m", input: "stream sdk", stream: true })) sdkStream.push(event);
  return { organization, instance, typed, typedStream, sdk, sdkStream };
}

describe("record, then replay with the upstream stopped", () => {
  let recorded: Seen;
  let replay: Emulator | undefined;
  const recordings = join(dir.path, "recordings");
  afterAll(async () => {
    await replay?.close();
  });

  it("records through the proxy with every secret scrubbed, the split one too", async () => {
    const proxy = createValidatingProxy({ upstream: upstream.url, recordDir: recordings, secrets: [CONFIGURED] });
    const url = await proxy.listen(0, "127.0.0.1");
    recorded = await suite(url);
    // Configured and platform secrets in a request of another recording.
    const named = await fetch(`${url}/v1/organization/signup`, {
      method: "POST",
      headers: { "content-type": "application/json", [RECORDING_HEADER]: "secrets" },
      body: JSON.stringify({ name: `team ${CONFIGURED} ${TELEGRAM_TOKEN}` }),
    });
    expect(named.status).toBe(201);
    const report = await proxy.close();
    expect(report.drifts).toEqual([]);

    // The client got the key, split over two deltas as the upstream sent it.
    const deltas = recorded.typedStream.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : []));
    expect(deltas.join("")).toBe(LEAKY_TEXT);
    expect(deltas.some((d) => d.includes(OPENAI_KEY))).toBe(false);

    const text = readFileSync(join(recordings, recordingFileName(DEFAULT_RECORDING)), "utf8");
    expect(findKeyShaped(text)).toEqual([]);
    expect(text).not.toContain(OPENAI_KEY.slice(0, 12));
    expect(text).not.toContain(OPENAI_KEY.slice(-12));
    expect(text).not.toMatch(/authorization/i);
    expect(text).toContain(`${"x".repeat(50)} <redacted>`);
    const secrets = readFileSync(join(recordings, recordingFileName("secrets")), "utf8");
    expect(secrets).toContain('"name": "team <redacted> <redacted>"');
    // The model's answers, as rules of the model-script format, e.g. the streamed one with its pace.
    const recording = JSON.parse(text) as { model_script: { rules: { match: { input: string }; answer: { text: string } }[] } };
    expect(recording.model_script.rules.map((r) => r.match.input)).toEqual(["hello", "leak", "hello sdk", "stream sdk"]);
    expect(recording.model_script.rules[1]!.answer.text).toBe(`${"x".repeat(50)} <redacted> and that is all.`);

    const check = runAgentBridge(["recordings", "check", recordings]);
    expect(await check.exited).toBe(0);
    expect(check.stdout()).toContain("2 recording(s), no secret found");
  });

  it("replays the same bodies to the typed client and the SDK with the upstream gone", async () => {
    await stopCli(upstream);
    replay = await createEmulator({ replay: { dir: recordings, mode: "strict", pace: false } });
    const url = await replay.listen(0, "127.0.0.1");
    const replayed = await suite(url);
    // What was scrubbed is replayed scrubbed; everything else is what the client saw when recording.
    // The streamed key came in two deltas cut at 64 characters: the first keeps the marker, the second loses its share.
    const cut = 64 - (LEAKY_TEXT.indexOf(OPENAI_KEY) as number);
    const scrubbed = (s: Seen) =>
      JSON.parse(
        JSON.stringify(s)
          .replaceAll(OPENAI_KEY, "<redacted>")
          .replace(`${OPENAI_KEY.slice(0, cut)}"`, '<redacted>"')
          .replace(`"${OPENAI_KEY.slice(cut)}`, '"'),
      ) as Seen;
    expect(replayed).toEqual(scrubbed(recorded));
    expect(replayed.sdkStream.length).toBeGreaterThan(3);
    const usage = (await (await fetch(`${url}/_emulator/recordings`)).json()) as { recordings: { name: string; unused: number[] }[] };
    expect(usage.recordings).toEqual([expect.objectContaining({ name: "default", unused: [] }), expect.objectContaining({ name: "secrets", unused: [1] })]);
  });

  it("replays a model answer as its hand-edited rule says it, streamed and not", async () => {
    const file = join(recordings, recordingFileName(DEFAULT_RECORDING));
    const recording = JSON.parse(readFileSync(file, "utf8")) as { model_script: { rules: { answer: { text: string } }[] } };
    recording.model_script.rules[0]!.answer.text = "Hand-edited answer.";
    recording.model_script.rules[1]!.answer.text = "Hand-edited stream.";
    writeFileSync(file, JSON.stringify(recording, null, 2));
    const edited = await createEmulator({ replay: { dir: recordings, mode: "strict", pace: false } });
    try {
      const api = createServiceClient({ baseUrl: await edited.listen(0, "127.0.0.1"), apiKey: "unused in replay" });
      const id = (recorded.instance as { id: string }).id;
      const answer = await api.createResponse({ instance_id: id, body: { model: "m", input: "hello" } });
      expect(outputTextOf(answer)).toBe("Hand-edited answer.");
      const events: ResponseStreamEvent[] = [];
      for await (const event of api.streamResponse({ instance_id: id, body: { model: "m", input: "leak" } })) events.push(event);
      expect(events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : [])).join("")).toBe("Hand-edited stream.");
      const completed = events.at(-1);
      expect(completed?.type === "response.completed" ? outputTextOf(completed.response) : undefined).toBe("Hand-edited stream.");
      // The same number of events at the same pace: only the text changed.
      expect(events.length).toBe(recorded.typedStream.length);
    } finally {
      await edited.close();
    }
  });

  it("answers a request nobody recorded with a 404 naming the closest recorded one", async () => {
    const url = replay!.url;
    const res = await fetch(`${url}/v1/instances`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"name":"agent 2","model_provider":"openai"}',
    });
    expect(res.status).toBe(404);
    expect(res.headers.get(REPLAY_HEADER)).toBe("miss");
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toContain("no recorded answer for POST /v1/instances in recording 'default'");
    expect(detail).toContain('Closest recorded request: #4 POST /v1/instances; differs in body $.name: recorded "agent", sent "agent 2"');
  });
});
