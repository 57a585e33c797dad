/**
 * The fake gateway's speech-to-text endpoint through the official `openai`
 * SDK: what it hears is documented and the same every time (a text file is
 * heard as its text, real audio as a sentence naming its size and hash),
 * `!fail` and `!sleep` directives answer errors and slow answers on the
 * gateway's clock, and bad requests get OpenAI-style errors.
 */
import OpenAI, { toFile } from "openai";
import { request } from "undici";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createGateway, type FakeGateway, type GatewayState } from "../../emulator/gateway/index.js";
import { createManualClock, type Clock } from "../../shared/clock.js";
import { cryptoRandom } from "../../shared/random.js";
import { waitUntil } from "../helpers/wait.js";

const manual = createManualClock();
/** The sleeps the gateway began, ms: a test advances the clock once the wait is under way. */
const sleeps: number[] = [];
const clock: Clock = { now: manual.now, setTimeout: manual.setTimeout, sleep: (ms, signal) => (sleeps.push(ms), manual.sleep(ms, signal)) };
let gateway: FakeGateway;
let openai: OpenAI;
beforeAll(async () => {
  const state: GatewayState = { responses: {}, heads: {} };
  gateway = createGateway({ state: () => state, onChange: () => {}, clock, random: cryptoRandom });
  const url = await gateway.listen();
  openai = new OpenAI({ apiKey: "sk-anything", baseURL: `${url}/v1`, maxRetries: 0 });
});
afterAll(() => gateway.close());

const transcribe = async (data: Buffer, name = "note.ogg", extra: { language?: string } = {}) =>
  openai.audio.transcriptions.create({ file: await toFile(data, name, { type: "audio/ogg" }), model: "whisper-1", ...extra });

it("hears a text file as its text, the same every time", async () => {
  expect((await transcribe(Buffer.from("  turn off the lights\n"))).text).toBe("turn off the lights");
  expect((await transcribe(Buffer.from("turn off the lights"), "other.ogg", { language: "en" })).text).toBe("turn off the lights");
});

it("hears real audio as a sentence naming its size, type and hash", async () => {
  const audio = Buffer.from([0x4f, 0x67, 0x67, 0x53, 0x00, 0x02, 0xff, 0x10]);
  const first = await transcribe(audio);
  expect(first.text).toMatch(/^\(The emulator heard 8 bytes of audio\/ogg, sha256 [0-9a-f]{12}\.\)$/);
  expect((await transcribe(audio)).text).toBe(first.text);
});

it("answers the status `!fail STATUS` asks for, as an OpenAI error", async () => {
  await expect(transcribe(Buffer.from("!fail 503"))).rejects.toMatchObject({ status: 503, code: "injected_fault" });
  await expect(transcribe(Buffer.from("!fail 429"))).rejects.toMatchObject({ status: 429 });
});

it("waits `!sleep MS` on the gateway's clock, then hears the rest", async () => {
  let answered = false;
  const pending = transcribe(Buffer.from("!sleep 5000\nlater words")).then((r) => {
    answered = true;
    return r;
  });
  await waitUntil(() => sleeps.includes(5000), "the gateway to sleep");
  manual.advance(4999);
  await new Promise((r) => setImmediate(r));
  expect(answered).toBe(false);
  manual.advance(1);
  expect((await pending).text).toBe("later words");
});

it("refuses what OpenAI refuses: no file, no model, a format it does not know, another method", async () => {
  const url = `${gateway.url}/v1/audio/transcriptions`;
  const post = async (form: FormData) => {
    const res = await fetch(url, { method: "POST", body: form });
    return { status: res.status, body: (await res.json()) as { error: { param: string | null } } };
  };
  const noFile = new FormData();
  noFile.set("model", "whisper-1");
  expect(await post(noFile)).toMatchObject({ status: 400, body: { error: { param: "file" } } });
  const noModel = new FormData();
  noModel.set("file", new Blob(["x"]), "a.ogg");
  expect(await post(noModel)).toMatchObject({ status: 400, body: { error: { param: "model" } } });
  const badFormat = new FormData();
  badFormat.set("file", new Blob(["x"]), "a.ogg");
  badFormat.set("model", "whisper-1");
  badFormat.set("response_format", "srt");
  expect(await post(badFormat)).toMatchObject({ status: 400, body: { error: { param: "response_format" } } });
  const get = await request(url, { method: "GET" });
  expect(get.statusCode).toBe(405);
  expect(get.headers.allow).toBe("POST");
  await get.body.dump();
});
