/**
 * Teams against Microsoft's own local tool, the Microsoft 365 Agents
 * Playground (`@microsoft/m365agentsplayground`: it mocks the Teams client
 * and the connector service and drives a bot's endpoint), over the HTTP and
 * WebSocket API its web UI uses: a person's message in the personal chat
 * reaches the adapter, the reply shows in the chat, and a streamed reply goes
 * by Teams' streaming protocol, opened by the turn's informative update.
 * Files: the Playground's web UI cannot attach a file and its connector keeps
 * no files, so a person's file comes as the Playground's own "custom
 * activity" (the activity Teams posts, with the file's pre-authorised
 * download URL) and the person's answer to a file consent card likewise (the
 * Playground has no `fileConsent/invoke` of its own); the download and
 * upload URLs are a stand-in for OneDrive served by this test. The
 * Playground sends no token, so the channel runs in the anonymous mode the
 * config must name in full.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { z } from "zod";
import { teamsChannelSchema } from "../../daemon/adapters/teams/config.js";
import { createTeamsAdapter } from "../../daemon/adapters/teams/index.js";
import type { ChatAdapter, InboundMessage } from "../../daemon/vocabulary/adapter.js";
import { systemClock } from "../../shared/clock.js";
import { INFORMATIVE_TEXT } from "../../daemon/adapters/teams/streams.js";
import { testSink } from "../fakes/sink.js";
import { wavFile } from "../helpers/audio-containers.js";
import { launchBrowser } from "../helpers/browser.js";
import { lacks } from "../helpers/system-programs.js";
import { waitUntil } from "../helpers/wait.js";

const ROOT = join(import.meta.dirname, "..", "..");
const Config = z.object({
  config: z.object({
    bot: z.object({ id: z.string(), name: z.string() }),
    currentUser: z.object({ id: z.string() }),
    personalChat: z.object({ id: z.string() }),
    groupChats: z.array(z.object({ id: z.string() })),
  }),
});
const Shown = z.looseObject({
  action: z.string(),
  message: z
    .looseObject({
      messageId: z.string().optional(),
      text: z.string().optional(),
      streamEntity: z.looseObject({ streamType: z.string(), streamSequence: z.number().optional() }).optional(),
      attachments: z.array(z.looseObject({ contentType: z.string(), content: z.unknown().optional() })).optional(),
    })
    .optional(),
});
const Template = z.looseObject({ id: z.string(), conversation: z.looseObject({ id: z.string() }) });

let adapter: ChatAdapter;
let playground: ChildProcess;
let socket: WebSocket;
let base = "";
const shown: z.output<typeof Shown>[] = [];
const received: InboundMessage[] = [];
/** The stand-in for OneDrive: files people send (served at /files/<name>) and what the bot uploads (PUT /upload/<name>). */
const drive = { files: new Map<string, Buffer>(), uploads: new Map<string, Buffer>(), base: "" };
const driveServer = createHttpServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const [, area, name = ""] = (req.url ?? "").split("/").map(decodeURIComponent);
    const file = drive.files.get(name);
    if (req.method === "GET" && area === "files" && file) return void res.writeHead(200, { "content-type": "application/octet-stream" }).end(file);
    if (req.method === "PUT" && area === "upload") {
      drive.uploads.set(name, Buffer.concat(chunks));
      return void res.writeHead(201, { "content-type": "application/json" }).end("{}");
    }
    res.writeHead(404).end();
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  const channel = {
    ...teamsChannelSchema.parse({
      type: "teams",
      app_id: "00000000-0000-0000-0000-000000000011",
      auth: "anonymous-local-tools-only",
      http: { port: 0 },
      access: { mode: "open" },
    }),
    id: "pg",
  };
  let endpoint = "";
  adapter = createTeamsAdapter(
    channel,
    {
      logger: pino({ level: "silent" }),
      state: (() => {
        const m = new Map<string, unknown>();
        return { get: <T>(k: string) => m.get(k) as T | undefined, set: async (k: string, v: unknown) => void m.set(k, v) };
      })(),
      dataDir: "/nonexistent",
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    {
      onListening: (url) => {
        endpoint = url;
      },
    },
  );
  await adapter.start(
    testSink({
      accept: (m) => {
        received.push(m);
        // The bot of this test: it answers the web UI's messages at once.
        if (m.text.startsWith("ui:"))
          void adapter.send({ platform: "teams", accountId: "pg", chatId: m.chatId, chatType: "direct" }, `echo ${m.text}`, { format: "plain" });
      },
    }),
  );
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  playground = spawn(join(ROOT, "node_modules", ".bin", "agentsplayground"), ["-e", endpoint, "-c", "msteams", "-p", String(port), "--dt"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    playground.stdout?.on("data", (d: Buffer) => (d.toString().includes("Listening on") ? resolve() : undefined));
    playground.once("exit", (code) => reject(new Error(`the Playground exited (${code})`)));
  });
  socket = new WebSocket(`ws://127.0.0.1:${port}/_ws_conversation/v1/conversations/stream`);
  socket.on("message", (data: Buffer) => {
    const event = Shown.safeParse(JSON.parse(data.toString("utf8")));
    if (event.success) shown.push(event.data);
  });
  await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
  await new Promise<void>((resolve) => driveServer.listen(0, "127.0.0.1", resolve));
  drive.base = `http://127.0.0.1:${(driveServer.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  driveServer.closeAllConnections();
  driveServer.close();
  socket?.close();
  playground?.kill();
  await adapter?.stop();
});

/** A person writes in the personal chat, or in the group chat @mentioning the bot (as the web UI sends a mention). */
async function say(text: string, where: "personal" | "group" = "personal"): Promise<InboundMessage> {
  const { config } = Config.parse(await (await fetch(`${base}/_internal/v1/config`)).json());
  const group = config.groupChats[0];
  const chat = where === "personal" || !group ? config.personalChat.id : group.id;
  const at = `<at>${config.bot.name}</at>`;
  const body =
    where === "personal"
      ? { from: { id: config.currentUser.id }, text, textFormat: "plain" }
      : { from: { id: config.currentUser.id }, text: `${at} ${text}`, textFormat: "plain", mentions: [{ mentioned: config.bot, text: at }] };
  const response = await fetch(`${base}/_conversation/v1/conversations/${encodeURIComponent(chat)}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return waitUntil(() => received.find((m) => m.text.endsWith(text)), `"${text}" at the adapter`);
}

it("answers a person in the personal chat, the reply shown by the Playground", async () => {
  const message = await say("hello from the playground");
  expect(message).toMatchObject({ platform: "teams", chatType: "direct" });
  await adapter.send({ platform: "teams", accountId: "pg", chatId: message.chatId, chatType: "direct" }, "**hello** back", { format: "markdown" });
  await waitUntil(() => shown.find((e) => e.action === "createMessage" && e.message?.text === "**hello** back"), "the reply in the Playground");
});

it("streams a reply in the personal chat with Teams' streaming protocol, the final text shown", async () => {
  const message = await say("stream please");
  const target = { platform: "teams", accountId: "pg", chatId: message.chatId, chatType: "direct" as const };
  const receipt = await adapter.send(target, "Writing", { format: "markdown", final: false });
  const id = receipt?.messageId ?? "";
  expect(id).toMatch(/\S/);
  // The Playground took the first streaming activity: the reply is an open stream, not a message to update.
  expect(adapter.edits?.mayBeOpen?.(id)).toBe(true);
  await adapter.edits?.edit(target, id, "Writing: the whole", { format: "markdown", final: false });
  await adapter.edits?.edit(target, id, "Writing: the whole answer", { format: "markdown", final: true });
  expect(adapter.edits?.mayBeOpen?.(id)).toBe(false);
  const last = await waitUntil(() => shown.find((e) => e.message?.text === "Writing: the whole answer"), "the streamed reply in the Playground");
  expect(last.message?.streamEntity).toMatchObject({ streamType: "final" });
  expect(shown.find((e) => e.message?.text === "Writing: the whole")?.message?.streamEntity).toMatchObject({ streamType: "streaming", streamSequence: 2 });
});

/** An activity as the person's client would post it, sent through the Playground's custom activity (it forwards it to the bot). */
async function custom(activity: Record<string, unknown>): Promise<z.output<typeof Template>> {
  const { config } = Config.parse(await (await fetch(`${base}/_internal/v1/config`)).json());
  const template = Template.parse(
    await (await fetch(`${base}/_internal/v1/customActivities/template?conversationId=${encodeURIComponent(config.personalChat.id)}`)).json(),
  );
  const response = await fetch(`${base}/_internal/v1/customActivities`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...template, ...activity }),
  });
  expect(response.status).toBe(200);
  return template;
}

it("starts a turn in the personal chat with an informative update, which the streamed reply then fills", async () => {
  const message = await say("informative please");
  const target = { platform: "teams", accountId: "pg", chatId: message.chatId, chatType: "direct" as const };
  await adapter.sendTyping(target);
  const opened = await waitUntil(
    () => shown.find((e) => e.action === "createMessage" && e.message?.streamEntity?.streamType === "informative"),
    "the informative update in the Playground",
  );
  expect(opened.message).toMatchObject({ text: INFORMATIVE_TEXT, streamEntity: { streamSequence: 1 } });
  const id = (await adapter.send(target, "Informed", { format: "markdown", final: false }))?.messageId;
  expect(id).toBe(opened.message?.messageId);
  await adapter.edits?.edit(target, id ?? "", "Informed: done", { format: "markdown", final: true });
  const streamed = await waitUntil(() => shown.find((e) => e.action === "updateMessage" && e.message?.text === "Informed"), "the streamed text");
  expect(streamed.message).toMatchObject({ messageId: id, streamEntity: { streamType: "streaming", streamSequence: 2 } });
  const last = await waitUntil(() => shown.find((e) => e.action === "updateMessage" && e.message?.text === "Informed: done"), "the final text");
  expect(last.message).toMatchObject({ messageId: id, streamEntity: { streamType: "final" } });
});

it("downloads the files a person sends in the personal chat and hands them over, a voice note with its length", async () => {
  drive.files.set("report.pdf", Buffer.from("%PDF-1.7 the report"));
  drive.files.set("Voice message.wav", wavFile(2));
  const sent = await custom({
    type: "message",
    text: "files attached",
    attachments: [
      {
        contentType: "application/vnd.microsoft.teams.file.download.info",
        name: "report.pdf",
        content: { downloadUrl: `${drive.base}/files/report.pdf`, uniqueId: "u-report", fileType: "pdf" },
      },
      {
        contentType: "application/vnd.microsoft.teams.file.download.info",
        name: "Voice message.wav",
        content: { downloadUrl: `${drive.base}/files/Voice%20message.wav`, uniqueId: "u-voice", fileType: "wav" },
      },
      { contentType: "text/html", content: "<p>files attached</p>" },
    ],
  });
  const message = await waitUntil(() => received.find((m) => m.messageId === sent.id), "the files at the adapter");
  expect(message).toMatchObject({ chatId: sent.conversation.id, chatType: "direct", text: "files attached" });
  expect(message.attachments?.map((a) => [a.fileName, a.kind, a.data.length])).toEqual([
    ["report.pdf", "document", 19],
    ["Voice message.wav", "audio", wavFile(2).length],
  ]);
  expect(message.attachments?.[1]?.seconds).toBe(2);
});

it("sends an image inline, and another file by Teams' consent card: accepted, the bytes are uploaded and the file card shows", async () => {
  const message = await say("send me files");
  const target = { platform: "teams", accountId: "pg", chatId: message.chatId, chatType: "direct" as const };
  const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
  await adapter.files?.send(target, { path: "chart.png", fileName: "chart.png", mimeType: "image/png", kind: "photo", data: png });
  await waitUntil(() => shown.find((e) => e.action === "createMessage" && e.message?.attachments?.[0]?.contentType === "image/png"), "the image");
  const notes = Buffer.from("the notes, uploaded");
  await adapter.files?.send(target, { path: "notes.txt", fileName: "notes.txt", mimeType: "text/plain", kind: "document", data: notes });
  const card = await waitUntil(
    () => shown.find((e) => e.message?.attachments?.[0]?.contentType === "application/vnd.microsoft.teams.card.file.consent"),
    "the consent card in the Playground",
  );
  const Consent = z.object({ sizeInBytes: z.number(), acceptContext: z.unknown() });
  const content = Consent.parse(card.message?.attachments?.[0]?.content);
  expect(content.sizeInBytes).toBe(notes.length);
  await custom({
    type: "invoke",
    name: "fileConsent/invoke",
    value: {
      type: "fileUpload",
      action: "accept",
      context: content.acceptContext,
      uploadInfo: {
        name: "notes.txt",
        uploadUrl: `${drive.base}/upload/notes.txt`,
        contentUrl: `${drive.base}/drive/notes.txt`,
        uniqueId: "u-notes",
        fileType: "txt",
      },
    },
  });
  await waitUntil(() => drive.uploads.get("notes.txt"), "the upload");
  expect(drive.uploads.get("notes.txt")?.toString()).toBe("the notes, uploaded");
  await waitUntil(
    () => shown.find((e) => e.message?.attachments?.[0]?.contentType === "application/vnd.microsoft.teams.card.file.info"),
    "the file card in the Playground",
  );
});

it("streams a reply in the group chat by updating it in place, never trying the protocol (the Playground answers it 405 there)", async () => {
  const message = await say("group stream please", "group");
  expect(message.chatType).toBe("group");
  const target = { platform: "teams", accountId: "pg", chatId: message.chatId, chatType: "group" as const };
  const id = (await adapter.send(target, "Group", { format: "markdown", final: false }))?.messageId ?? "";
  expect(adapter.edits?.mayBeOpen?.(id)).toBe(false);
  await adapter.edits?.edit(target, id, "Group: the answer", { format: "markdown", final: true });
  const updated = await waitUntil(
    () => shown.find((e) => e.action === "updateMessage" && e.message?.text === "Group: the answer"),
    "the update in the Playground",
  );
  expect(updated.message?.streamEntity).toBeUndefined();
});

it.skipIf(lacks("chromium", import.meta.url))("answers a person typing in the Playground's web UI, in Chromium", { timeout: 60_000 }, async () => {
  const browser = await launchBrowser();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${base}/`);
    const box = page.getByRole("textbox").first();
    await box.click();
    await box.pressSequentially("ui: hello from Chromium");
    await page.getByRole("button", { name: "Send Message" }).click();
    await vi.waitFor(async () => expect(await page.getByText("echo ui: hello from Chromium").count()).toBeGreaterThan(0), { timeout: 20_000, interval: 50 });
  } finally {
    await browser.close();
  }
});
