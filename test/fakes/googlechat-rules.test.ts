/**
 * The fake Google Chat refuses what Google refuses (its documented rules,
 * driven by plain HTTP and by Google's own libraries, never by the bridge's
 * adapter): the Chat API without a valid token, `messageReplyOption` and
 * threads, text over 4,096 characters, an update without `updateMask` or of
 * someone else's message, uploads and reactions by an app, quotas; the token
 * endpoint's checks of a service account's assertion; and the events it
 * posts, signed so that google-auth-library verifies them.
 */
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { JWT, OAuth2Client } from "google-auth-library";
import { describe, expect, it, onTestFinished } from "vitest";
import { createFakeGoogleChat, type FakeGoogleChat } from "./googlechat.js";

const PROJECT = "123123123123";

async function fake(
  options: { spaceWrites?: number } = {},
): Promise<{ chat: FakeGoogleChat; token: string; api: (path: string, init?: RequestInit) => Promise<Response> }> {
  const chat = await createFakeGoogleChat({ audienceType: "project-number", audience: PROJECT, spaceWrites: options.spaceWrites ?? 50 });
  onTestFinished(() => chat.close());
  const key = JSON.parse(chat.serviceAccountKey) as { client_email: string; private_key: string; token_uri: string };
  const jwt = new JWT({ email: key.client_email, key: key.private_key, scopes: ["https://www.googleapis.com/auth/chat.bot"] });
  // The library posts to Google's token URL: sent to the fake's here.
  jwt.transporter.interceptors.request.add({
    resolved: async (o) => {
      if (String(o.url) === "https://oauth2.googleapis.com/token") o.url = new URL(key.token_uri);
      return o;
    },
  });
  const token = (await jwt.getAccessToken()).token ?? "";
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${chat.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(init.headers ?? {}) } });
  return { chat, token, api };
}

const post = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body) });

describe("the Chat API", () => {
  it("refuses a request without a token Google issued (401 UNAUTHENTICATED)", async () => {
    const { chat } = await fake();
    chat.say({ space: "spaces/dm-alice", text: "hi" });
    for (const authorization of [undefined, "Bearer ya29.made-up"]) {
      const res = await fetch(`${chat.url}/v1/spaces/dm-alice/messages`, { method: "POST", headers: authorization ? { authorization } : {}, body: "{}" });
      expect([res.status, ((await res.json()) as { error: { status: string } }).error.status]).toEqual([401, "UNAUTHENTICATED"]);
    }
  });

  it("replies into a named thread only with a messageReplyOption; REPLY_MESSAGE_OR_FAIL refuses a thread that is not there", async () => {
    const { chat, api } = await fake();
    const thread = chat.say({ space: "spaces/team", text: "root" }).message.thread.name;
    const into = (await (
      await api("/v1/spaces/team/messages?messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD", post({ text: "a", thread: { name: thread } }))
    ).json()) as {
      thread: { name: string };
    };
    expect(into.thread.name).toBe(thread);
    const ignored = (await (await api("/v1/spaces/team/messages", post({ text: "b", thread: { name: thread } }))).json()) as { thread: { name: string } };
    expect(ignored.thread.name).not.toBe(thread);
    const fallback = (await (
      await api("/v1/spaces/team/messages?messageReplyOption=1", post({ text: "c", thread: { name: "spaces/team/threads/none" } }))
    ).json()) as {
      thread: { name: string };
    };
    expect(fallback.thread.name).not.toBe("spaces/team/threads/none");
    const orFail = await api(
      "/v1/spaces/team/messages?messageReplyOption=REPLY_MESSAGE_OR_FAIL",
      post({ text: "d", thread: { name: "spaces/team/threads/none" } }),
    );
    expect(orFail.status).toBe(404);
  });

  it("answers a create whose requestId it has seen with the message it made then", async () => {
    const { chat, api } = await fake();
    chat.say({ space: "spaces/dm-alice", text: "hi" });
    const first = (await (await api("/v1/spaces/dm-alice/messages?requestId=r1", post({ text: "one" }))).json()) as { name: string };
    const again = (await (await api("/v1/spaces/dm-alice/messages?requestId=r1", post({ text: "one" }))).json()) as { name: string };
    const other = (await (await api("/v1/spaces/dm-alice/messages?requestId=r2", post({ text: "one" }))).json()) as { name: string };
    expect(again.name).toBe(first.name);
    expect(other.name).not.toBe(first.name);
    expect(chat.messages("spaces/dm-alice").map((m) => m.text)).toEqual(["hi", "one", "one"]);
  });

  it("refuses text over 4,096 characters and an empty message (400 INVALID_ARGUMENT)", async () => {
    const { chat, api } = await fake();
    chat.say({ space: "spaces/dm-alice", text: "hi" });
    expect((await api("/v1/spaces/dm-alice/messages", post({ text: "x".repeat(4097) }))).status).toBe(400);
    expect((await api("/v1/spaces/dm-alice/messages", post({}))).status).toBe(400);
    expect((await api("/v1/spaces/dm-alice/messages", post({ text: "x".repeat(4096) }))).status).toBe(200);
  });

  it("updates only with an updateMask, only the app's own messages", async () => {
    const { chat, api } = await fake();
    const person = chat.say({ space: "spaces/dm-alice", text: "mine" }).message;
    const own = (await (await api("/v1/spaces/dm-alice/messages", post({ text: "v1" }))).json()) as { name: string };
    expect((await api(`/v1/${own.name}`, { method: "PUT", body: JSON.stringify({ text: "v2" }) })).status).toBe(400);
    expect((await api(`/v1/${own.name}?updateMask=text`, { method: "PATCH", body: JSON.stringify({ text: "v2" }) })).status).toBe(200);
    expect(chat.messages("spaces/dm-alice").find((m) => m.name === own.name)?.text).toBe("v2");
    expect((await api(`/v1/${person.name}?updateMask=text`, { method: "PUT", body: JSON.stringify({ text: "hacked" }) })).status).toBe(403);
    expect((await api("/v1/spaces/dm-alice/messages/nope?updateMask=text", { method: "PUT", body: JSON.stringify({ text: "x" }) })).status).toBe(404);
  });

  it("refuses an app's upload and reactions: they take user authentication (403)", async () => {
    const { chat, api } = await fake();
    chat.say({ space: "spaces/dm-alice", text: "hi" });
    expect((await api("/upload/v1/spaces/dm-alice/attachments:upload?uploadType=multipart", { method: "POST", body: "x" })).status).toBe(403);
    expect((await api("/v1/spaces/dm-alice/messages/m/reactions", post({ emoji: { unicode: "👀" } }))).status).toBe(403);
  });

  it("answers 429 RESOURCE_EXHAUSTED over a space's write quota, and does nothing", async () => {
    const { chat, api } = await fake({ spaceWrites: 1 });
    chat.say({ space: "spaces/dm-alice", text: "hi" });
    expect((await api("/v1/spaces/dm-alice/messages", post({ text: "one" }))).status).toBe(200);
    const second = await api("/v1/spaces/dm-alice/messages", post({ text: "two" }));
    expect([second.status, ((await second.json()) as { error: { status: string } }).error.status]).toEqual([429, "RESOURCE_EXHAUSTED"]);
    expect(chat.messages("spaces/dm-alice").map((m) => m.text)).toEqual(["hi", "one"]);
  });
});

describe("the token endpoint", () => {
  it("refuses an assertion signed with another key, and one for the wrong audience", async () => {
    const { chat } = await fake();
    const key = JSON.parse(chat.serviceAccountKey) as { client_email: string; token_uri: string };
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const jwt = new JWT({ email: key.client_email, key: other, scopes: ["https://www.googleapis.com/auth/chat.bot"] });
    jwt.transporter.interceptors.request.add({
      resolved: async (o) => {
        if (String(o.url) === "https://oauth2.googleapis.com/token") o.url = new URL(key.token_uri);
        return o;
      },
    });
    await expect(jwt.getAccessToken()).rejects.toThrow(/invalid_grant/);
  });
});

describe("events", () => {
  it("signs each event so google-auth-library verifies it with the published certificates, for the configured audience only", async () => {
    const { chat } = await fake();
    const certs = (await (await fetch(chat.certsUrl)).json()) as Record<string, string>;
    const client = new OAuth2Client();
    const ticket = await client.verifySignedJwtWithCertsAsync(chat.token(), certs, PROJECT, ["chat@system.gserviceaccount.com"]);
    expect(ticket.getPayload()).toMatchObject({ iss: "chat@system.gserviceaccount.com", aud: PROJECT });
    await expect(client.verifySignedJwtWithCertsAsync(chat.token({}, { forged: true }), certs, PROJECT, ["chat@system.gserviceaccount.com"])).rejects.toThrow(
      /signature/,
    );
  });

  it("posts a space message only when it mentions the app, with argumentText and a USER_MENTION of the app", async () => {
    const { chat } = await fake();
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let data = "";
      req.on("data", (c: Buffer) => {
        data += c.toString();
      });
      req.on("end", () => {
        bodies.push(JSON.parse(data));
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    chat.setEndpoint(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await chat.say({ space: "spaces/team", text: "not for the app", mention: false }).answered;
    await chat.say({ space: "spaces/team", text: "for the app" }).answered;
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject({
      type: "MESSAGE",
      message: {
        text: "@Agent Bridge for the app",
        argumentText: " for the app",
        annotations: [{ type: "USER_MENTION", userMention: { user: { type: "BOT" } } }],
      },
    });
  });
});
