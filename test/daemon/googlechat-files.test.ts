/**
 * Files out on Google Chat, with the real adapter against the fake Google
 * Chat. An app cannot upload (`media.upload` takes user authentication only),
 * so with `file_links.public_base_url` a reply file goes as a card: its name,
 * size and the link's end, the image itself for a PNG or JPG (Chat's image
 * widget takes an https URL only), and a Download button opening the file's
 * expiring link on the app's own endpoint. The test follows the link as a
 * person's browser would, over real TLS through the reverse proxy in front of
 * the endpoint (test/helpers/tls-proxy.ts): the bytes, named, then 404 once
 * the link expired. The same file sent again
 * is one message (the create's requestId). Without a public_base_url no file
 * capability and `check` warns.
 */
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { googleChatChannelSchema } from "../../daemon/adapters/googlechat/config.js";
import { serviceAccountClient } from "../../daemon/adapters/googlechat/credentials.js";
import { createGoogleChatAdapter } from "../../daemon/adapters/googlechat/index.js";
import { parseKey } from "../../daemon/adapters/googlechat/key.js";
import type { ChatAdapter, ChatTarget, InboundMessage, OutboundFile } from "../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../shared/clock.js";
import { Agent, fetch as undiciFetch } from "undici";
import { TEST_TLS_CERT } from "../fakes/tls-test-cert.js";
import { tempDir } from "../helpers/emulator.js";
import { startTlsProxy, type TlsProxy } from "../helpers/tls-proxy.js";
import type { FakeGoogleChat } from "../fakes/googlechat.js";
import { googleChatChannelFor, startFakeGoogleChat } from "../helpers/googlechat-setup.js";
import { testSink } from "../fakes/sink.js";
import { waitUntil } from "../helpers/wait.js";

const PROJECT = "987654321012";
/** The app's public base: the TLS proxy in front of its endpoint (set once the proxy listens). */
let PUBLIC = "";
const HOUR = 60 * 60 * 1000;

const clock = createManualClock(Date.now());
const dir = tempDir();
const accepted: InboundMessage[] = [];
let fake: FakeGoogleChat;
let adapter: ChatAdapter;
let endpointBase = "";

const channelOf = (settings: Record<string, unknown>) => ({
  ...googleChatChannelSchema.parse(googleChatChannelFor(fake, PROJECT, { syncReplyMs: 0, access: { mode: "open" }, ...settings })),
  id: "gc",
});

const deps = () => ({
  logger: pino({ level: "silent" }),
  state: { get: () => undefined, set: async () => undefined },
  dataDir: dir.path,
  clock,
  maxAttachmentBytes: 1024 * 1024,
});

let tls: TlsProxy;
/** A person's browser (or Chat's image proxy) following a link: https, the proxy's certificate trusted. */
const browser = new Agent({ connect: { ca: TEST_TLS_CERT } });
const follow = (url: string) => {
  if (!url.startsWith("https://")) throw new Error(`not an https link: ${url}`);
  return undiciFetch(url, { dispatcher: browser });
};

beforeAll(async () => {
  tls = await startTlsProxy(() => endpointBase);
  PUBLIC = `${tls.url}/googlechat/files`;
  fake = await startFakeGoogleChat(PROJECT);
  const channel = channelOf({ file_links: { public_base_url: PUBLIC, ttl_hours: 48 } });
  adapter = createGoogleChatAdapter(channel, deps(), {
    onListening: (url) => {
      endpointBase = url;
      fake.setEndpoint(`${url}${channel.http.path}`);
    },
  });
  await adapter.start(testSink({ accept: (m) => void accepted.push(m) }));
});

afterAll(async () => {
  await adapter?.stop();
  await fake?.close();
  await tls?.close();
  await browser.close();
  dir.remove();
});

async function asked(text: string): Promise<ChatTarget> {
  const { answered } = fake.say({ space: "spaces/dm-alice", text });
  await answered;
  const m = await waitUntil(() => accepted.find((a) => a.text === text), `"${text}" taken`);
  return {
    platform: m.platform,
    accountId: m.accountId,
    chatId: m.chatId,
    chatType: m.chatType,
    ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
    replyToMessageId: m.messageId,
  };
}

const fileOf = (fileName: string, mimeType: string, kind: OutboundFile["kind"], data: Buffer): OutboundFile => ({
  path: `out/${fileName}`,
  fileName,
  mimeType,
  kind,
  data,
});

const widgetsOf = (message: { cardsV2?: { card?: { sections?: { widgets?: unknown[] }[] } }[] } | undefined) =>
  (message?.cardsV2 ?? []).flatMap((c) => c.card?.sections ?? []).flatMap((s) => s.widgets ?? []) as {
    image?: { imageUrl?: string; altText?: string };
    buttonList?: { buttons?: { text?: string; onClick?: { openLink?: { url?: string } } }[] };
  }[];

it("an image goes as a card showing it, with a Download button; the link gives the bytes until it expires", async () => {
  const target = await asked("draw the chart");
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.alloc(3000, 5)]);
  await adapter.files?.send(target, fileOf("chart.png", "image/png", "photo", png));
  const message = fake.messages("spaces/dm-alice").at(-1);
  expect(message?.sender.type).toBe("BOT");
  expect(message?.cardsV2?.[0]).toMatchObject({ cardId: "file", card: { header: { title: "chart.png" } } });
  const widgets = widgetsOf(message);
  const imageUrl = widgets[0]?.image?.imageUrl ?? "";
  const link = widgets[1]?.buttonList?.buttons?.[0];
  expect(link?.text).toBe("Download");
  expect(imageUrl.startsWith(`${PUBLIC}/`)).toBe(true);
  expect(imageUrl).toMatch(/\/googlechat\/files\/[A-Za-z0-9_-]{43}\/chart\.png$/);
  expect(link?.onClick?.openLink?.url).toBe(imageUrl);

  const got = await follow(imageUrl);
  expect([got.status, got.headers.get("content-type")]).toEqual([200, "image/png"]);
  expect(Buffer.from(await got.arrayBuffer())).toEqual(png);

  clock.advance(48 * HOUR);
  const expired = await follow(imageUrl);
  expect(expired.status).toBe(404);
  await expired.body?.cancel();
});

it("a document goes as a card with its name, size and the link's end, and a button that downloads it (no image widget)", async () => {
  const target = await asked("the report please");
  const pdf = Buffer.from("%PDF-1.7 the report");
  await adapter.files?.send(target, fileOf("report.pdf", "application/pdf", "document", pdf));
  const message = fake.messages("spaces/dm-alice").at(-1);
  const subtitle = (message?.cardsV2?.[0] as { card?: { header?: { subtitle?: string } } } | undefined)?.card?.header?.subtitle;
  expect(subtitle).toMatch(/^19 bytes · the link works until \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  const widgets = widgetsOf(message);
  expect(widgets.some((w) => w.image)).toBe(false);
  const url = widgets[0]?.buttonList?.buttons?.[0]?.onClick?.openLink?.url ?? "";
  const got = await follow(url);
  expect(got.headers.get("content-disposition")).toMatch(/^attachment; filename="report\.pdf"/);
  expect(Buffer.from(await got.arrayBuffer())).toEqual(pdf);
});

it("the same file sent again (its first answer lost) is one message: the same link, the same requestId", async () => {
  const target = await asked("once only");
  const file = fileOf("once.txt", "text/plain", "document", Buffer.from("once"));
  const before = fake.messages("spaces/dm-alice").length;
  const first = await adapter.files?.send(target, file);
  const second = await adapter.files?.send(target, file);
  expect(second).toEqual(first);
  expect(fake.messages("spaces/dm-alice").length).toBe(before + 1);
});

it("Chat refuses an image widget whose URL is not https", async () => {
  // Through the adapter the URL is always https (the config takes no other); the fake's rule, called as the app.
  const parsed = parseKey(fake.serviceAccountKey);
  if (!parsed.ok) throw new Error(parsed.reason);
  const url = `${fake.url}/v1/spaces/dm-alice/messages`;
  const headers = await serviceAccountClient(parsed.key).getRequestHeaders(url);
  headers.set("content-type", "application/json");
  const card = (imageUrl: string) => ({ cardsV2: [{ cardId: "x", card: { sections: [{ widgets: [{ image: { imageUrl } }] }] } }] });
  const refused = await fetch(url, { method: "POST", headers, body: JSON.stringify(card("http://chat-bridge.example.com/a.png")) });
  expect([refused.status, ((await refused.json()) as { error: { status: string } }).error.status]).toEqual([400, "INVALID_ARGUMENT"]);
  const taken = await fetch(url, { method: "POST", headers, body: JSON.stringify(card("https://chat-bridge.example.com/a.png")) });
  expect(taken.status).toBe(200);
  await taken.body?.cancel();
});

it("without public_base_url: no files capability, and a public_base_url over the endpoint's path is refused", () => {
  expect(createGoogleChatAdapter(channelOf({}), deps()).files).toBeUndefined();
  const parsed = googleChatChannelSchema.safeParse({
    type: "googlechat",
    audience_type: "project-number",
    audience: PROJECT,
    serviceAccountKey: "${KEY}",
    file_links: { public_base_url: "https://chat-bridge.example.com/googlechat" },
  });
  expect(parsed.success).toBe(false);
  expect(JSON.stringify(parsed.error?.issues)).toContain("must not contain the endpoint's path");
});
