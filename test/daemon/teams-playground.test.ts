/**
 * Teams against Microsoft's own local tool, the Microsoft 365 Agents
 * Playground (`@microsoft/m365agentsplayground`: it mocks the Teams client
 * and the connector service and drives a bot's endpoint), over the HTTP and
 * WebSocket API its web UI uses: a person's message in the personal chat
 * reaches the adapter, the reply shows in the chat, and a streamed reply goes
 * by Teams' streaming protocol. The Playground sends no token, so the channel runs in the
 * anonymous mode the config must name in full.
 */
import { type ChildProcess, spawn } from "node:child_process";
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
import { testSink } from "../fakes/sink.js";
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
    })
    .optional(),
});

let adapter: ChatAdapter;
let playground: ChildProcess;
let socket: WebSocket;
let base = "";
const shown: z.output<typeof Shown>[] = [];
const received: InboundMessage[] = [];

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
}, 60_000);

afterAll(async () => {
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
