/**
 * The Telegram adapter's Bot API path (daemon/adapters/telegram/fetch.ts):
 * JSON calls go straight through undici and must keep grammY's contract
 * (answers, GrammyError for refusals, HttpError for network failures and
 * timeouts, null fields left out, abort by signal), over real HTTP.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Api, GrammyError, HttpError, InputFile } from "grammy";
import { describe, expect, it, onTestFinished } from "vitest";
import { createTelegramFetch, directJsonCalls, toApiSignal } from "../../daemon/adapters/telegram/fetch.js";

const TOKEN = "123:secret-token";

/** A Bot API stand-in: `answer` gets the method and the parsed body. */
async function botApi(answer: (method: string, body: unknown, res: ServerResponse, req: IncomingMessage) => void): Promise<string> {
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (d: Buffer) => (text += d.toString()));
    req.on("end", () => {
      const json = req.headers["content-type"] === "application/json";
      answer(req.url?.split("/").at(-1) ?? "", json && text ? JSON.parse(text) : text, res, req);
    });
  });
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function apiOn(apiRoot: string, timeoutSeconds = 5): Api {
  const api = new Api(TOKEN, { apiRoot, timeoutSeconds, fetch: createTelegramFetch() });
  api.config.use(directJsonCalls({ apiRoot, token: TOKEN, timeoutSeconds }));
  return api;
}

describe("Telegram Bot API calls through undici", () => {
  it("posts the payload as JSON without null fields, and returns the result", async () => {
    const seen: unknown[] = [];
    const root = await botApi((method, body, res, req) => {
      seen.push({ method, body, type: req.headers["content-type"], path: req.url });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true, result: { message_id: 7, date: 0, chat: { id: 1, type: "private" } } }));
    });
    const sent = await apiOn(root).sendMessage(1, "hi", { link_preview_options: null as never });
    expect(sent.message_id).toBe(7);
    expect(seen).toEqual([{ method: "sendMessage", body: { chat_id: 1, text: "hi" }, type: "application/json", path: `/bot${TOKEN}/sendMessage` }]);
  });

  it("an upload goes grammY's way (multipart), through the same undici path", async () => {
    const seen: { type: string | undefined; body: unknown }[] = [];
    const root = await botApi((_method, body, res, req) => {
      seen.push({ type: req.headers["content-type"], body });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true, result: { message_id: 8, date: 0, chat: { id: 1, type: "private" } } }));
    });
    const sent = await apiOn(root).sendDocument(1, new InputFile(Buffer.from("file body"), "notes.txt"));
    expect(sent.message_id).toBe(8);
    expect(seen[0]?.type).toMatch(/^multipart\/form-data; boundary=/);
    expect(String(seen[0]?.body)).toContain("file body");
  });

  it("a refusal is a GrammyError; a non-Telegram error page keeps its status and text", async () => {
    const root = await botApi((method, _body, res) => {
      if (method === "getMe") {
        res.writeHead(403, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" }));
      } else {
        res.writeHead(502);
        res.end("<html>502 from the proxy</html>");
      }
    });
    const api = apiOn(root);
    await expect(api.getMe()).rejects.toMatchObject({ error_code: 403, description: "Forbidden: bot was blocked by the user" });
    const error = await api.sendChatAction(1, "typing").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GrammyError);
    expect((error as GrammyError).error_code).toBe(502);
    expect((error as GrammyError).description).toBe("HTTP 502 Bad Gateway: <html>502 from the proxy</html>");
  });

  it("no answer is grammY's HttpError, without the token in its message", async () => {
    // A port that was just listened on and closed: nothing answers there.
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, "127.0.0.1", resolve));
    const root = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => gone.close(() => resolve()));
    const error = await apiOn(root)
      .getMe()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).message).toBe("Network request for 'getMe' failed!");
    expect((error as HttpError).message).not.toContain(TOKEN);
  });

  it("a call unanswered for timeoutSeconds fails with grammY's timeout message", async () => {
    const root = await botApi(() => undefined); // never answers
    const error = await apiOn(root, 0.2)
      .getMe()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(((error as HttpError).error as Error).message).toBe("Request to 'getMe' timed out after 0.2 seconds");
  });

  it("an aborted signal ends the call under way", async () => {
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const root = await botApi(() => arrived()); // never answers
    const stop = new AbortController();
    const call = apiOn(root).getUpdates({ timeout: 30 }, toApiSignal(stop.signal));
    await inFlight;
    stop.abort();
    await expect(call).rejects.toBeInstanceOf(HttpError);
  });
});
