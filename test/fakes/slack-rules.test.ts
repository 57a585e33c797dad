/**
 * The Slack fake refuses what Slack refuses (its documented rules, driven by
 * Slack's own WebClient and by plain HTTP, never by the bridge's adapter):
 * errors as HTTP 200 {ok:false}, missing scopes with `needed` and `provided`,
 * 429 with Retry-After per channel, msg_too_long, message_not_found, the
 * upload steps in order, a stopped stream, a status on what is not a thread,
 * unsigned file downloads, and the
 * signed event deliveries retried with Slack's headers when not answered.
 */
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebClient } from "@slack/web-api";
import { describe, expect, it, onTestFinished } from "vitest";
import { WebSocket } from "ws";
import { waitUntil } from "../helpers/wait.js";
import { createFakeSlack, type FakeSlack, type FakeSlackOptions } from "./slack.js";

const BOT = "xoxb-1-2-rulesBotToken";
const APP = "xapp-1-A1-3-rulesAppToken";
const SECRET = "rulesSigningSecret0123456789abcd";

async function fake(options: Partial<FakeSlackOptions> = {}): Promise<{ slack: FakeSlack; web: WebClient }> {
  const slack = await createFakeSlack({ botToken: BOT, appToken: APP, signingSecret: SECRET, ...options });
  onTestFinished(() => slack.close());
  const web = new WebClient(BOT, { slackApiUrl: `${slack.apiBase}/`, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
  return { slack, web };
}

const platformError = (error: unknown) => (error as { data?: unknown }).data;

describe("Web API", () => {
  it("answers errors as HTTP 200 {ok:false}: bad tokens, missing scopes with needed/provided", async () => {
    const { slack, web } = await fake({ scopes: ["chat:write"] });
    const raw = await fetch(`${slack.apiBase}/auth.test`, { method: "POST", headers: { authorization: "Bearer xoxb-wrong" } });
    expect([raw.status, await raw.json()]).toEqual([200, { ok: false, error: "invalid_auth" }]);
    const none = await fetch(`${slack.apiBase}/auth.test`, { method: "POST" });
    expect(await none.json()).toEqual({ ok: false, error: "not_authed" });
    const missing = await web.reactions.add({ channel: "C0GENERAL1", timestamp: "1.1", name: "eyes" }).catch(platformError);
    expect(missing).toMatchObject({ ok: false, error: "missing_scope", needed: "reactions:write", provided: "chat:write" });
    // The app token is for apps.connections.open only, and the bot token is not.
    const wrongType = await new WebClient(BOT, { slackApiUrl: `${slack.apiBase}/` }).apps.connections.open({ app_token: undefined }).catch(platformError);
    expect(wrongType).toMatchObject({ error: "not_allowed_token_type" });
  });

  it("limits chat.postMessage per channel with 429 and Retry-After, doing nothing", async () => {
    const { slack, web } = await fake({ postBurst: 2 });
    await web.chat.postMessage({ channel: "C0GENERAL1", text: "1" });
    await web.chat.postMessage({ channel: "C0GENERAL1", text: "2" });
    const limited = await web.chat.postMessage({ channel: "C0GENERAL1", text: "3" }).catch((e: { code?: string; retryAfter?: number }) => e);
    expect(limited).toMatchObject({ code: "slack_webapi_rate_limited_error", retryAfter: 1 });
    // Another channel has its own budget.
    await web.chat.postMessage({ channel: "C0OTHER001", text: "elsewhere" });
    expect(slack.messages("C0GENERAL1").map((m) => m.text)).toEqual(["1", "2"]);
  });

  it("refuses text over 40,000 characters, an unknown ts on update, and an append to a stopped stream", async () => {
    const { web } = await fake();
    expect(await web.chat.postMessage({ channel: "D0ALICE001", text: "x".repeat(40_001) }).catch(platformError)).toMatchObject({ error: "msg_too_long" });
    expect(await web.chat.update({ channel: "D0ALICE001", ts: "9.999", text: "x" }).catch(platformError)).toMatchObject({ error: "message_not_found" });
    const stream = await web.chat.startStream({ channel: "C0GENERAL1", thread_ts: "1.1", markdown_text: "Hel" });
    await web.chat.appendStream({ channel: "C0GENERAL1", ts: stream.ts ?? "", markdown_text: "lo" });
    await web.chat.stopStream({ channel: "C0GENERAL1", ts: stream.ts ?? "" });
    expect(await web.chat.appendStream({ channel: "C0GENERAL1", ts: stream.ts ?? "", markdown_text: "!" }).catch(platformError)).toMatchObject({
      error: "message_not_in_streaming_state",
    });
    // A DM stream needs its recipient.
    expect(await web.chat.startStream({ channel: "D0ALICE001", thread_ts: "1.1" }).catch(platformError)).toMatchObject({ error: "missing_recipient_user_id" });
  });

  it("sets the thinking status on a thread only: a reply inside a thread, or an unknown ts, is invalid_thread_ts", async () => {
    const { slack, web } = await fake({ requestUrl: "http://127.0.0.1:9/unused" });
    // Events are not the point here: nothing listens, and nothing is retried once the fake closes.
    const root = slack.say({ user: "U0ALICE001", channel: "D0ALICE001", text: "hello" });
    const reply = slack.say({ user: "U0ALICE001", channel: "D0ALICE001", text: "in the thread", threadTs: root.ts });
    await web.assistant.threads.setStatus({ channel_id: "D0ALICE001", thread_ts: root.ts, status: "is thinking..." });
    for (const ts of [reply.ts, "9.999"]) {
      expect(await web.assistant.threads.setStatus({ channel_id: "D0ALICE001", thread_ts: ts, status: "is thinking..." }).catch(platformError)).toMatchObject({
        ok: false,
        error: "invalid_thread_ts",
      });
    }
    // The bot's own top-level message is a thread too (an assistant thread starts with one).
    const greeting = await web.chat.postMessage({ channel: "D0ALICE001", text: "How can I help?" });
    await web.assistant.threads.setStatus({ channel_id: "D0ALICE001", thread_ts: greeting.ts ?? "", status: "is thinking..." });
    expect(slack.statuses.map((s) => s.threadTs)).toEqual([root.ts, greeting.ts]);
  });

  it("takes a file only in order: URL, bytes, completion; files.upload is retired", async () => {
    const { slack, web } = await fake();
    const ticket = await web.files.getUploadURLExternal({ filename: "a.txt", length: 5 });
    const early = await web.files.completeUploadExternal({ files: [{ id: ticket.file_id ?? "" }], channel_id: "D0ALICE001" }).catch(platformError);
    expect(early).toMatchObject({ error: "file_not_found" });
    expect((await fetch(ticket.upload_url ?? "", { method: "POST", body: "hello" })).status).toBe(200);
    await web.files.completeUploadExternal({ files: [{ id: ticket.file_id ?? "", title: "A" }], channel_id: "D0ALICE001" });
    expect(slack.messages("D0ALICE001")[0]?.files.map((f) => [f.name, f.data.toString()])).toEqual([["a.txt", "hello"]]);
    expect(await web.apiCall("files.upload", { channels: "D0ALICE001", content: "x" }).catch(platformError)).toMatchObject({ error: "method_deprecated" });
  });

  it("serves a shared file to the bot token only (else the sign-in page)", async () => {
    const { slack } = await fake({ requestUrl: "http://127.0.0.1:9/none" });
    // A file shared in a DM: its url_private_download from the event.
    const events: unknown[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        events.push(JSON.parse(body));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    slack.setRequestUrl(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    slack.say({ user: "U1", channel: "D0ALICE001", text: "file", files: [{ name: "n.txt", mimetype: "text/plain", data: Buffer.from("secret notes") }] });
    const event = await waitUntil(() => events[0] as { event: { files: { url_private_download: string }[] } } | undefined, "the event");
    const url = event.event.files[0]?.url_private_download ?? "";
    const anonymous = await fetch(url);
    expect([anonymous.status, anonymous.headers.get("content-type")]).toEqual([200, "text/html"]);
    const bot = await fetch(url, { headers: { authorization: `Bearer ${BOT}` } });
    expect(await bot.text()).toBe("secret notes");
  });
});

describe("HTTP Events API", () => {
  it("signs each delivery and retries one not answered 2xx in time with X-Slack-Retry-Num/-Reason, same event_id", async () => {
    const seen: { num?: string | undefined; reason?: string | undefined; id: string; valid: boolean }[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const ts = String(req.headers["x-slack-request-timestamp"]);
        const expected = `v0=${createHmac("sha256", SECRET).update(`v0:${ts}:${body}`).digest("hex")}`;
        const num = req.headers["x-slack-retry-num"] as string | undefined;
        seen.push({
          num,
          reason: req.headers["x-slack-retry-reason"] as string | undefined,
          id: (JSON.parse(body) as { event_id: string }).event_id,
          valid: req.headers["x-slack-signature"] === expected,
        });
        if (num === undefined) return; // the first try is never answered: a timeout
        if (num === "1") return void res.writeHead(500).end();
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const { slack } = await fake({ requestUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, ackTimeoutMs: 200, retryDelaysMs: [0, 10, 10] });
    const { eventIds } = slack.say({ user: "U1", channel: "D0ALICE001", text: "hi" });
    await waitUntil(() => slack.deliveries.length === 3, "three attempts");
    expect(slack.deliveries.map((d) => [d.attempt, d.outcome])).toEqual([
      [0, "timeout"],
      [1, 500],
      [2, 200],
    ]);
    expect(seen.map((s) => [s.num, s.reason, s.id, s.valid])).toEqual([
      [undefined, undefined, eventIds[0], true],
      ["1", "http_timeout", eventIds[0], true],
      ["2", "http_error", eventIds[0], true],
    ]);
  });

  it("sends a channel mention twice when both are subscribed: message and app_mention, same ts", async () => {
    const { slack } = await fake({ mode: "socket" });
    const said = slack.say({ user: "U1", channel: "C0GENERAL1", text: `<@${slack.bot.userId}> hi` });
    expect(said.eventIds).toHaveLength(2);
    const dm = slack.say({ user: "U1", channel: "D0ALICE001", text: `<@${slack.bot.userId}> hi` });
    expect(dm.eventIds).toHaveLength(1);
  });
});

describe("Socket Mode", () => {
  async function connect(slack: FakeSlack): Promise<{ ws: WebSocket; frames: Record<string, unknown>[] }> {
    const open = (await (await fetch(`${slack.apiBase}/apps.connections.open`, { method: "POST", headers: { authorization: `Bearer ${APP}` } })).json()) as {
      url: string;
    };
    const ws = new WebSocket(open.url);
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (d) => frames.push(JSON.parse(d.toString()) as Record<string, unknown>));
    onTestFinished(() => ws.terminate());
    await waitUntil(() => frames.some((f) => f.type === "hello"), "hello");
    return { ws, frames };
  }

  it("says hello, sends each event as an envelope, and sends it again with a higher retry_attempt until acknowledged", async () => {
    const { slack } = await fake({ mode: "socket", ackTimeoutMs: 100 });
    const { ws, frames } = await connect(slack);
    slack.say({ user: "U1", channel: "D0ALICE001", text: "hi" });
    const envelopes = () => frames.filter((f) => f.type === "events_api");
    await waitUntil(() => envelopes().length === 2, "the envelope, then again");
    expect(envelopes().map((e) => e.retry_attempt)).toEqual([0, 1]);
    ws.send(JSON.stringify({ envelope_id: envelopes()[1]?.envelope_id }));
    await waitUntil(() => slack.socketStats.acked === 1, "the ack");
    expect(slack.socketStats).toMatchObject({ sent: 2, acked: 1, redelivered: 1 });
  });

  it("announces a refresh with disconnect, and keeps a deaf socket up while events wait", async () => {
    const { slack } = await fake({ mode: "socket", refreshGraceMs: 50 });
    const first = await connect(slack);
    slack.refresh();
    await waitUntil(() => first.frames.some((f) => f.type === "disconnect" && f.reason === "refresh_requested"), "disconnect");
    await waitUntil(() => first.ws.readyState === WebSocket.CLOSED, "closed after the grace");
    const second = await connect(slack);
    slack.goDeaf();
    slack.say({ user: "U1", channel: "D0ALICE001", text: "queued" });
    const third = await connect(slack);
    await waitUntil(() => third.frames.some((f) => f.type === "events_api"), "the event on a new connection");
    expect(second.frames.some((f) => f.type === "events_api")).toBe(false);
    expect(second.ws.readyState).toBe(WebSocket.OPEN);
  });
});
