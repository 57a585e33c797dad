/**
 * Files out on LINE, against the fake LINE (test/fakes/line.ts) driving the
 * real adapter over real HTTP. LINE takes media only by HTTPS URL, which its
 * servers fetch: the adapter keeps each reply file behind an expiring link on
 * its own endpoint (file_links.public_base_url) and sends an image, audio or
 * video message with it (audio with its duration, video with a preview image),
 * or the link as text for any other file. The public base is a real TLS proxy
 * in front of the endpoint (a test-only certificate, test/fakes/tls-test-cert.ts,
 * which the fake LINE trusts); the fake fetches each URL as LINE's servers
 * would (https only, the certificate verified) and gets the bytes, then 404
 * once the link expired on the injected clock. Without a public_base_url the
 * adapter offers no files and `check` warns.
 */
import { messagingApi } from "@line/bot-sdk";
import pino from "pino";
import { Agent, request } from "undici";
import { afterAll, beforeAll, expect, it, onTestFinished } from "vitest";
import { lineChannelSchema } from "../../daemon/adapters/line/config.js";
import { mp4DurationMs } from "../../daemon/adapters/line/file-messages.js";
import { createLineAdapter } from "../../daemon/adapters/line/index.js";
import { linePlatform } from "../../daemon/adapters/line/platform.js";
import { type HttpClient, undiciHttp } from "../../daemon/helpers/probe.js";
import type { ChatTarget, InboundMessage, InboundSink, OutboundFile } from "../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../shared/clock.js";
import { TEST_TLS_CERT } from "../fakes/tls-test-cert.js";
import { tempDir } from "../helpers/emulator.js";
import { startTlsProxy, type TlsProxy } from "../helpers/tls-proxy.js";
import { createFakeLine, type FakeLine } from "../fakes/line.js";
import { admitUpTo } from "../fakes/sink.js";
import { lineChannelFor } from "../helpers/line-setup.js";
import { waitUntil } from "../helpers/wait.js";
import { logCollector } from "./adapters/harness/harness.js";

const TOKEN = "lineTestChannelAccessTokenThatMustStaySecret0123456789abcdef=";
const SECRET = "fedcba9876543210fedcba9876543210";
const ALICE = { userId: `U${"1".repeat(32)}` };
/** The bridge's public base: the TLS proxy in front of its endpoint (set once the proxy listens). */
let PUBLIC = "";
const HOUR = 60 * 60 * 1000;

const clock = createManualClock(Date.now());
const logs = logCollector();
const dir = tempDir();
let fake: FakeLine;
let adapter: ReturnType<typeof createLineAdapter>;
let endpointUrl = "";
const accepted: InboundMessage[] = [];
/** A live link from an earlier case, for the restart case. */
let reportUrl = "";

const sink: InboundSink = {
  async accept(message) {
    accepted.push(message);
    return { status: "accepted", acknowledge: true };
  },
  admit: admitUpTo(1024 * 1024),
  status: () => undefined,
};

let tls: TlsProxy;

const channelOf = (settings: Record<string, unknown>) => lineChannelFor(fake, { token: TOKEN, secret: SECRET }, settings);

const deps = () => ({
  logger: pino({ level: "debug" }, logs),
  state: { get: () => undefined, set: async () => undefined },
  dataDir: dir.path,
  clock,
  maxAttachmentBytes: 1024 * 1024,
});

beforeAll(async () => {
  // The reverse proxy an operator runs: TLS with the test's certificate, forwarding to the endpoint; LINE trusts that certificate.
  tls = await startTlsProxy(() => endpointUrl);
  PUBLIC = `${tls.url}/line/files`;
  fake = await createFakeLine({ channelAccessToken: TOKEN, channelSecret: SECRET, now: () => clock.now(), trustedCa: TEST_TLS_CERT });
  const channel = channelOf({ file_links: { public_base_url: PUBLIC, ttl_hours: 24 } });
  adapter = createLineAdapter(channel, deps(), {
    onListening: (url) => {
      endpointUrl = url;
      fake.setWebhookUrl(`${url}${channel.http.path}`);
    },
  });
  await adapter.start(sink);
});

afterAll(async () => {
  await adapter?.stop();
  await fake?.close();
  await tls?.close();
  dir.remove();
  for (const secret of [TOKEN, SECRET]) expect(logs.text()).not.toContain(secret);
});

/** A message from Alice the bot answers. */
async function asked(text: string): Promise<ChatTarget> {
  await fake.say(ALICE, text);
  const m = await waitUntil(() => accepted.find((a) => a.text === text), `"${text}" taken`);
  return { platform: "line", accountId: "ln", chatId: m.chatId, chatType: m.chatType, replyToMessageId: m.messageId };
}

const fileOf = (fileName: string, mimeType: string, kind: OutboundFile["kind"], data: Buffer): OutboundFile => ({
  path: `out/${fileName}`,
  fileName,
  mimeType,
  kind,
  data,
});

/** A minimal M4A: `ftyp`, then `moov` holding an `mvhd` (version 0) of `ms` at timescale 1000. */
function m4a(ms: number): Buffer {
  const box = (type: string, payload: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(8 + payload.length);
    head.write(type, 4, "latin1");
    return Buffer.concat([head, payload]);
  };
  const mvhd = Buffer.alloc(100);
  mvhd.writeUInt32BE(1000, 12);
  mvhd.writeUInt32BE(ms, 16);
  return Buffer.concat([box("ftyp", Buffer.from("M4A \0\0\0\0M4A mp42", "latin1")), box("moov", box("mvhd", mvhd)), box("mdat", Buffer.alloc(64, 7))]);
}

it("an image goes as an image message whose https URL (and preview) LINE fetches: the bytes, until the link expires", async () => {
  const target = await asked("draw me something");
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.alloc(2000, 1)]);
  await adapter.files?.send(target, fileOf("chart.png", "image/png", "photo", png));
  const sent = fake.messages(ALICE.userId).at(-1);
  expect(sent?.type).toBe("image");
  expect(sent?.via).toBe("reply");
  const url = String(sent?.raw.originalContentUrl);
  expect(url.startsWith(`${PUBLIC}/`)).toBe(true);
  expect(sent?.raw.previewImageUrl).toBe(url);

  const got = await fake.fetchMedia(url);
  expect(got.status).toBe(200);
  expect(got.headers.get("content-type")).toBe("image/png");
  expect(Buffer.from(await got.arrayBuffer())).toEqual(png);

  clock.advance(24 * HOUR);
  const expired = await fake.fetchMedia(url);
  expect(expired.status).toBe(404);
  await expired.body?.cancel();
});

it("an M4A audio file goes as an audio message with its duration read from the file", async () => {
  const target = await asked("read it to me");
  const audio = m4a(3500);
  expect(mp4DurationMs(audio)).toBe(3500);
  await adapter.files?.send(target, fileOf("answer.m4a", "audio/mp4", "voice", audio));
  const sent = fake.messages(ALICE.userId).at(-1);
  expect([sent?.type, sent?.raw.duration]).toEqual(["audio", 3500]);
  const got = await fake.fetchMedia(String(sent?.raw.originalContentUrl), { headers: { range: "bytes=0-7" } });
  expect(got.status).toBe(206);
  expect(Buffer.from(await got.arrayBuffer())).toEqual(audio.subarray(0, 8));
});

it("an MP4 video goes as a video message with a preview image LINE can fetch (a PNG within LINE's 1 MB)", async () => {
  const target = await asked("show me the clip");
  const mp4 = Buffer.concat([Buffer.from("\0\0\0\x18ftypmp42", "latin1"), Buffer.alloc(500, 9)]);
  // The core types a file by its extension and knows no mp4: it comes as a document.
  await adapter.files?.send(target, fileOf("clip.mp4", "application/octet-stream", "document", mp4));
  const sent = fake.messages(ALICE.userId).at(-1);
  expect(sent?.type).toBe("video");
  const video = await fake.fetchMedia(String(sent?.raw.originalContentUrl));
  expect(video.headers.get("content-type")).toBe("video/mp4");
  expect(Buffer.from(await video.arrayBuffer())).toEqual(mp4);
  const preview = await fake.fetchMedia(String(sent?.raw.previewImageUrl));
  expect(preview.headers.get("content-type")).toBe("image/png");
  const png = Buffer.from(await preview.arrayBuffer());
  expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
  expect(png.subarray(12, 16).toString("latin1")).toBe("IHDR");
  expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([240, 240]);
  expect(png.length).toBeLessThanOrEqual(1024 * 1024);
});

it("a document, an image over LINE's preview limit and audio of another kind go as a link in text; the link downloads the file", async () => {
  const target = await asked("send the report");
  const pdf = Buffer.from("%PDF-1.7 report");
  await adapter.files?.send(target, fileOf("report.pdf", "application/pdf", "document", pdf));
  const text = fake.messages(ALICE.userId).at(-1);
  expect(text?.type).toBe("text");
  const [head, url = "", until] = (text?.text ?? "").split("\n");
  expect(head).toBe("📎 report.pdf (15 bytes)");
  expect(url).toMatch(new RegExp(`^${PUBLIC.replace(/[.]/g, "\\.")}/[A-Za-z0-9_-]{43}/report\\.pdf$`));
  expect(until).toMatch(/^\(The link works until \d{4}-\d\d-\d\d \d\d:\d\d UTC\.\)$/);
  reportUrl = url;
  const got = await fake.fetchMedia(url);
  expect(got.headers.get("content-disposition")).toMatch(/^attachment; filename="report\.pdf"/);
  expect(Buffer.from(await got.arrayBuffer())).toEqual(pdf);

  await adapter.files?.send(target, fileOf("big.jpg", "image/jpeg", "photo", Buffer.alloc(1024 * 1024 + 1, 2)));
  await adapter.files?.send(target, fileOf("note.ogg", "audio/ogg", "voice", Buffer.from("OggS")));
  expect(
    fake
      .messages(ALICE.userId)
      .slice(-2)
      .map((m) => [m.type, m.text?.split("\n")[0]]),
  ).toEqual([
    ["text", "📎 big.jpg (1 MB)"],
    ["text", "📎 note.ogg (4 bytes)"],
  ]);
});

it("a file sent again after its answer was lost arrives once (the same link, the same message)", async () => {
  const target = await asked("one picture only");
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.alloc(100, 3)]);
  const before = fake.messages(ALICE.userId).length;
  fake.dropNext();
  const file = fileOf("once.png", "image/png", "photo", png);
  await expect(adapter.files?.send(target, file)).rejects.toThrow();
  await adapter.files?.send(target, file);
  const after = fake.messages(ALICE.userId).slice(before);
  expect(after.map((m) => m.type)).toEqual(["image"]);
});

it("a new life of the adapter (a restart) serves the links the last one made, from disk", async () => {
  expect(reportUrl).not.toBe("");
  await adapter.stop();
  const channel = channelOf({ file_links: { public_base_url: PUBLIC, ttl_hours: 24 } });
  adapter = createLineAdapter(channel, deps(), {
    onListening: (url) => {
      endpointUrl = url;
      fake.setWebhookUrl(`${url}${channel.http.path}`);
    },
  });
  await adapter.start(sink);
  const got = await fake.fetchMedia(reportUrl);
  expect([got.status, Buffer.from(await got.arrayBuffer()).toString()]).toEqual([200, "%PDF-1.7 report"]);
});

it("LINE refuses media by a URL that is not https, and audio without its duration", async () => {
  const client = new messagingApi.MessagingApiClient({ channelAccessToken: TOKEN, baseURL: fake.apiBase });
  const push = (message: messagingApi.Message) =>
    client.pushMessage({ to: ALICE.userId, messages: [message] }).then(
      () => 200,
      (e: { status?: number }) => e.status,
    );
  expect(await push({ type: "image", originalContentUrl: "http://bridge.example.com/a.png", previewImageUrl: "https://bridge.example.com/a.png" })).toBe(400);
  expect(await push({ type: "image", originalContentUrl: "https://bridge.example.com/a.png", previewImageUrl: "http://bridge.example.com/a.png" })).toBe(400);
  expect(await push({ type: "audio", originalContentUrl: "https://bridge.example.com/a.m4a" } as messagingApi.Message)).toBe(400);
  expect(() => fake.fetchMedia("http://bridge.example.com/line/files/x")).toThrow(/HTTPS only/);
  // And only from a server whose certificate it trusts: the bridge's plain endpoint is no https server.
  await expect(fake.fetchMedia(`https://${endpointUrl.slice("http://".length)}/line/files/x`)).rejects.toThrow();
});

it("without public_base_url: no files capability (the core says the file stays in the workspace), and check warns; with it, check is ok", async () => {
  const plain = createLineAdapter(channelOf({}), deps());
  expect(plain.files).toBeUndefined();
  const checkDeps = { http: undiciHttp, timeoutMs: 5000, readFile: async () => "" };
  const without = await linePlatform.check(channelOf({}), checkDeps);
  expect(without?.status).toBe("warn");
  expect(without?.message).toContain("no file_links.public_base_url: files the agent makes are not sent");
  expect(without?.fix).toContain("file_links.public_base_url");
  // Through the operator's reverse proxy (whose certificate the check's client trusts here): the route answers the probe.
  const trusting = new Agent({ connect: { ca: TEST_TLS_CERT } });
  onTestFinished(() => trusting.close());
  const http: HttpClient = async (url, req) => {
    const method = req.method === "HEAD" ? "HEAD" : req.method === "POST" ? "POST" : "GET";
    const res = await request(url, { method, headers: req.headers ?? {}, body: req.body ?? null, signal: req.signal, dispatcher: trusting });
    const headers = Object.fromEntries(Object.entries(res.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])));
    return { status: res.statusCode, text: await res.body.text(), headers };
  };
  const viaProxy = { ...checkDeps, http };
  const withIt = await linePlatform.check(channelOf({ file_links: { public_base_url: PUBLIC } }), viaProxy);
  expect(withIt?.message).toContain(`reply files served at ${PUBLIC}/… (reachable)`);
  expect(withIt?.message).not.toContain("no file_links.public_base_url");
  // A public URL the proxy does not forward to the file route: a warning that says so, with its fix.
  const elsewhere = await linePlatform.check(channelOf({ file_links: { public_base_url: `${tls.url}/elsewhere/files` } }), viaProxy);
  expect(elsewhere?.status).toBe("warn");
  expect(elsewhere?.message).toContain(`a HEAD of ${tls.url}/elsewhere/files/probe did not reach the channel's file route (HTTP 404)`);
  expect(elsewhere?.fix).toContain("forward /elsewhere/files/ unchanged");
});

it("a public_base_url over the webhook path is refused by the config", () => {
  const parsed = lineChannelSchema.safeParse({
    type: "line",
    channel_access_token: TOKEN,
    channel_secret: SECRET,
    file_links: { public_base_url: "https://bridge.example.com/line" },
  });
  expect(parsed.success).toBe(false);
  expect(JSON.stringify(parsed.error?.issues)).toContain("must not contain the webhook path");
});
