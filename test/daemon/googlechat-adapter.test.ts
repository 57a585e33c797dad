/**
 * What is particular to Google Chat, with the real adapter (google-auth-library,
 * @google-apps/chat in REST mode) against the fake Google Chat: every request's
 * bearer token verified for both audience types and forged ones refused before
 * anything reaches the core; the reply given in the HTTP answer when it is ready
 * within the window, through the API otherwise, never both and never lost; Chat's
 * quotas as transient failures; threads; attachments fetched with media.download.
 */
import { request } from "node:http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { googleChatChannelSchema } from "../../daemon/adapters/googlechat/config.js";
import { createGoogleChatAdapter } from "../../daemon/adapters/googlechat/index.js";
import { markdownToChat } from "../../daemon/adapters/googlechat/outbound.js";
import { type AcceptOutcome, type ChatAdapter, type ChatTarget, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { createFakeGoogleChat, type FakeGoogleChat } from "../fakes/googlechat.js";
import { testSink } from "../fakes/sink.js";
import { createSteppableClock, type SteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

const PROJECT = "987654321012";

interface Rig {
  fake: FakeGoogleChat;
  adapter: ChatAdapter;
  accepted: InboundMessage[];
  endpoint: string;
  clock: SteppableClock;
  logs: string[];
  close(): Promise<void>;
}

async function rig(
  options: {
    audienceType?: "project-number" | "app-url";
    syncReplyMs?: number;
    spaceWrites?: number;
    accept?: (m: InboundMessage) => AcceptOutcome | undefined;
  } = {},
): Promise<Rig> {
  const audienceType = options.audienceType ?? "project-number";
  const fake = await createFakeGoogleChat({ audienceType, audience: PROJECT, spaceWrites: options.spaceWrites ?? 50 });
  const clock = createSteppableClock();
  const accepted: InboundMessage[] = [];
  const logs: string[] = [];
  // With app-url the audience is the endpoint's URL, known once it listens: a placeholder the fake then signs for.
  const channel = {
    ...googleChatChannelSchema.parse({
      type: "googlechat",
      audience_type: audienceType,
      audience: audienceType === "project-number" ? PROJECT : "http://127.0.0.1/placeholder",
      serviceAccountKey: fake.serviceAccountKey,
      api: fake.url,
      certsUrl: fake.certsUrl,
      http: { port: 0 },
      syncReplyMs: options.syncReplyMs ?? 0,
      access: { mode: "open" },
    }),
    id: "gc",
  };
  let endpoint = "";
  const adapter = createGoogleChatAdapter(
    channel,
    {
      logger: pino({ level: "trace" }, { write: (line: string) => void logs.push(line) }),
      state: { get: () => undefined, set: async () => undefined },
      dataDir: "/nonexistent",
      clock,
      maxAttachmentBytes: 1024 * 1024,
    },
    {
      onListening: (url) => {
        endpoint = `${url}${channel.http.path}`;
      },
    },
  );
  await adapter.start(
    testSink({
      accept: (m) => {
        accepted.push(m);
        return options.accept?.(m);
      },
    }),
  );
  if (audienceType === "app-url") {
    // The endpoint's URL is the audience the config names and Chat signs for.
    channel.audience = endpoint;
    fake.setEndpoint(endpoint, endpoint);
  } else fake.setEndpoint(endpoint);
  return {
    fake,
    adapter,
    accepted,
    endpoint,
    clock,
    logs,
    close: async () => {
      await adapter.stop();
      await fake.close();
    },
  };
}

const targetOf = (m: InboundMessage): ChatTarget => ({
  platform: m.platform,
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
  replyToMessageId: m.messageId,
});

const event = (space: string, text: string) => ({
  type: "MESSAGE",
  eventTime: new Date().toISOString(),
  space: { name: space, type: "DM", spaceType: "DIRECT_MESSAGE", singleUserBotDm: true },
  user: { name: "users/mallory", type: "HUMAN" },
  message: { name: `${space}/messages/forged-${text.length}`, sender: { name: "users/mallory", type: "HUMAN" }, text, thread: { name: `${space}/threads/t1` } },
});

describe("google chat: every request's bearer token is verified (project number)", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig();
  });
  afterAll(() => r.close());

  it("takes a request Chat signed for this project", async () => {
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: "signed by chat" });
    expect((await answered).status).toBe(200);
    await waitUntil(() => r.accepted.find((m) => m.text === "signed by chat"), "the signed message");
  });

  it.each([
    ["no token at all", () => undefined],
    ["a token signed with a key Google never published", (f: FakeGoogleChat) => f.token({}, { forged: true })],
    ["a token naming an unknown key", (f: FakeGoogleChat) => f.token({}, { kid: "not-a-google-key" })],
    ["a token for another project", (f: FakeGoogleChat) => f.token({ aud: "111111111111" })],
    ["a token from another issuer", (f: FakeGoogleChat) => f.token({ iss: "someone@example.iam.gserviceaccount.com" })],
    ["an expired token", (f: FakeGoogleChat) => f.token({ iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 })],
    ["a token that is not a JWT", () => "not-a-jwt"],
  ])("refuses %s with 401, and nothing reaches the core", async (_name, make) => {
    const before = r.accepted.length;
    const token = make(r.fake);
    const forged = event("spaces/dm-mallory", `forged ${_name}`);
    const answer =
      token === undefined
        ? await fetch(r.endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(forged) }).then((res) => ({
            status: res.status,
          }))
        : await r.fake.post(forged, token);
    expect(answer.status).toBe(401);
    // A signed message after it is taken: the refused one did not slip in before it.
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: `after ${_name}` });
    await answered;
    await waitUntil(() => r.accepted.find((m) => m.text === `after ${_name}`), "the next signed message");
    expect(r.accepted.slice(before).map((m) => m.text)).toEqual([`after ${_name}`]);
    // The token is never logged.
    if (token) expect(r.logs.join("")).not.toContain(token);
  });

  it("verifies a button tap like any event: a forged CARD_CLICKED is refused", async () => {
    const forged = {
      type: "CARD_CLICKED",
      space: { name: "spaces/dm-alice", spaceType: "DIRECT_MESSAGE" },
      user: { name: "users/mallory" },
      message: { name: "spaces/dm-alice/messages/x.x" },
      common: { invokedFunction: "agent-bridge-answer", parameters: { q: "q1", o: "1" } },
    };
    expect((await r.fake.post(forged, r.fake.token({}, { forged: true }))).status).toBe(401);
    expect(r.accepted.some((m) => m.answers)).toBe(false);
  });
});

describe("google chat: every request's bearer token is verified (endpoint URL)", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig({ audienceType: "app-url" });
  });
  afterAll(() => r.close());

  it("takes a Google ID token for the endpoint URL, sent by Chat", async () => {
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: "oidc signed" });
    expect((await answered).status).toBe(200);
    await waitUntil(() => r.accepted.find((m) => m.text === "oidc signed"), "the message");
  });

  it.each([
    ["another endpoint's token", { aud: "https://elsewhere.example/chat" }],
    ["a token of another Google account", { email: "someone@gmail.com" }],
    ["a token whose email is not verified", { email_verified: false }],
    ["a token from another issuer", { iss: "https://evil.example" }],
  ])("refuses %s", async (_name, claims) => {
    expect((await r.fake.post(event("spaces/dm-mallory", _name), r.fake.token(claims))).status).toBe(401);
    expect(r.accepted.some((m) => m.text === _name)).toBe(false);
  });
});

describe("google chat: the reply in the HTTP answer or through the API, once", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig({ syncReplyMs: 5000 });
  });
  afterAll(() => r.close());

  it("answers within the window in the HTTP response itself (no API call)", async () => {
    const { answered } = r.fake.say({ space: "spaces/team", text: "quick one" });
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "quick one"), "the message");
    const callsBefore = r.fake.calls().length;
    await r.adapter.send(targetOf(message), "**quick** answer", { format: "markdown" });
    const answer = await answered;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ text: "*quick* answer", thread: { name: `spaces/team/threads/${message.threadId}` } });
    const shown = r.fake.messages("spaces/team").filter((m) => m.sender.type === "BOT");
    expect(shown.map((m) => [m.text, m.via, m.thread.name])).toEqual([["*quick* answer", "response", `spaces/team/threads/${message.threadId}`]]);
    expect(r.fake.calls().slice(callsBefore)).toEqual([]);
    // The second chunk of the same reply goes through the API into the same thread.
    await r.adapter.send(targetOf(message), "and more", { format: "plain" });
    expect(
      r.fake
        .messages("spaces/team")
        .filter((m) => m.sender.type === "BOT")
        .map((m) => [m.text, m.via, m.thread.name]),
    ).toEqual([
      ["*quick* answer", "response", `spaces/team/threads/${message.threadId}`],
      ["and more", "api", `spaces/team/threads/${message.threadId}`],
    ]);
  });

  it("past the window the request is answered empty and the reply goes through the API", async () => {
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: "slow one" });
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "slow one"), "the message");
    await waitUntil(() => r.clock.delays().includes(5000), "the window's timer");
    r.clock.advance(5000);
    expect(await answered).toEqual({ status: 200, body: "{}" });
    await r.adapter.send(targetOf(message), "late answer", { format: "plain" });
    expect(
      r.fake
        .messages("spaces/dm-alice")
        .filter((m) => m.text === "late answer")
        .map((m) => m.via),
    ).toEqual(["api"]);
  });

  it("a streamed reply is never taken by the open request (it must be edited)", async () => {
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: "stream it" });
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "stream it"), "the message");
    const receipt = await r.adapter.send(targetOf(message), "partial", { format: "plain", final: false });
    expect(receipt?.messageId).toMatch(/^spaces\/dm-alice\/messages\//);
    await r.adapter.edits?.edit(targetOf(message), receipt?.messageId ?? "", "partial, then whole", { format: "plain", final: true });
    r.clock.advance(5000);
    expect((await answered).body).toBe("{}");
    expect(
      r.fake
        .messages("spaces/dm-alice")
        .filter((m) => m.sender.type === "BOT" && m.text.startsWith("partial"))
        .map((m) => m.text),
    ).toEqual(["partial, then whole"]);
  });

  it("a reply to a request Chat closed goes through the API: not lost, not doubled", async () => {
    const space = "spaces/dm-carol";
    const ev = {
      type: "MESSAGE",
      eventTime: new Date().toISOString(),
      space: { name: space, type: "DM", spaceType: "DIRECT_MESSAGE", singleUserBotDm: true },
      user: { name: "users/carol", type: "HUMAN" },
      message: {
        name: `${space}/messages/m1.m1`,
        sender: { name: "users/carol", type: "HUMAN" },
        text: "hang up on me",
        thread: { name: `${space}/threads/m1` },
      },
    };
    // Chat's side of the connection goes away while the bridge still holds the request open.
    r.fake.say({ space, text: "the space exists" });
    const body = JSON.stringify(ev);
    const req = request(r.endpoint, { method: "POST", headers: { authorization: `Bearer ${r.fake.token()}`, "content-type": "application/json" } });
    req.on("error", () => undefined);
    req.end(body);
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "hang up on me"), "the message");
    req.destroy();
    await waitUntil(() => r.logs.some((line) => line.includes("closed the request before the reply")), "the bridge seeing the request gone");
    await r.adapter.send(targetOf(message), "for carol", { format: "plain" });
    expect(
      r.fake
        .messages(space)
        .filter((m) => m.text === "for carol")
        .map((m) => m.via),
    ).toEqual(["api"]);
  });
});

describe("google chat: quotas, threads, attachments, formatting", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig({ spaceWrites: 1 });
  });
  afterAll(() => r.close());

  it("a write over Chat's quota is a transient failure, and nothing is posted", async () => {
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: "quota" });
    await answered;
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "quota"), "the message");
    r.fake.exhaust(1);
    const error = await r.adapter.send(targetOf(message), "over quota", { format: "plain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SendError);
    expect(error).toMatchObject({ permanent: false, status: 429 });
    expect(r.fake.messages("spaces/dm-alice").some((m) => m.text === "over quota")).toBe(false);
    expect(r.fake.calls().filter((c) => c.endsWith(" 429"))).toHaveLength(1);
  });

  it("the same reply sent again (its first answer lost, or its sender fenced off) is one message: the create's requestId", async () => {
    const { answered } = r.fake.say({ space: "spaces/dm-alice", text: "once please" });
    await answered;
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "once please"), "the message");
    const first = await r.adapter.send(targetOf(message), "the one answer", { format: "plain" });
    r.clock.advance(1000);
    const again = await r.adapter.send(targetOf(message), "the one answer", { format: "plain" });
    expect(again).toEqual(first);
    expect(r.fake.messages("spaces/dm-alice").filter((m) => m.text === "the one answer")).toHaveLength(1);
  });

  it("a space's write quota (a write a second) refuses the second write within the second", async () => {
    const { answered } = r.fake.say({ space: "spaces/busy", text: "two writes" });
    await answered;
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "two writes"), "the message");
    const results = await Promise.allSettled([
      r.adapter.send(targetOf(message), "one", { format: "plain" }),
      r.adapter.send(targetOf(message), "two", { format: "plain" }),
    ]);
    expect(results.map((x) => x.status).sort()).toEqual(["fulfilled", "rejected"]);
  });

  it("a space's threads are sessions of their own; replies go into the thread", async () => {
    const first = r.fake.say({ space: "spaces/team2", text: "thread one" }).message;
    r.fake.say({ space: "spaces/team2", text: "thread two" });
    r.fake.say({ space: "spaces/team2", text: "thread one again", thread: first.thread.name });
    const [a, b, c] = await waitUntil(() => {
      const found = ["thread one", "thread two", "thread one again"].map((t) => r.accepted.find((m) => m.text === t));
      return found.every(Boolean) ? (found as InboundMessage[]) : undefined;
    }, "three messages");
    expect(a).toMatchObject({ chatId: "spaces/team2", chatType: "group", mentioned: true, userId: "users/alice" });
    expect(a?.threadId).not.toBe(b?.threadId);
    expect(c?.threadId).toBe(a?.threadId);
    // The mention is not part of what the agent reads.
    expect(a?.text).toBe("thread one");
  });

  it("a person's attachment is fetched with media.download; audio is marked audio", async () => {
    const data = Buffer.from("OggS fake voice note");
    r.fake.say({ space: "spaces/dm-alice", text: "listen", attachments: [{ contentName: "note.ogg", contentType: "audio/ogg", data }] });
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "listen"), "the message");
    expect(message.attachments).toEqual([{ kind: "audio", fileName: "note.ogg", mimeType: "audio/ogg", data }]);
  });

  it("offers no reactions, and no file sending without file_links.public_base_url: Chat lets an app upload or react only with user authentication", () => {
    expect(r.adapter.files).toBeUndefined();
    expect(r.adapter.reactions).toBeUndefined();
  });

  it("renders markdown as Chat formats text, code left alone", () => {
    expect(markdownToChat("**bold** and *it* and ~~gone~~ [site](https://example.com) `**code**`")).toBe(
      "*bold* and _it_ and ~gone~ <https://example.com|site> `**code**`",
    );
    expect(markdownToChat("# Title\n```\n**raw**\n```")).toBe("*Title*\n```\n**raw**\n```");
  });
});

describe("google chat: button taps", () => {
  let r: Rig;
  const answered = new Set<string>();
  beforeAll(async () => {
    // As the core answers: the first tap on a question is its answer, later ones duplicates; one user may not answer.
    r = await rig({
      accept: (m) => {
        if (!m.answers) return undefined;
        if (m.userId === "users/mallory") return { status: "refused", reason: "not_yours", acknowledge: true };
        if (answered.has(m.answers.questionId)) return { status: "duplicate", acknowledge: true };
        answered.add(m.answers.questionId);
        return undefined;
      },
    });
  });
  afterAll(() => r.close());

  it("a card with a button per option; the first tap is the answer, a second and a stranger's are told why not, privately", async () => {
    r.fake.say({ space: "spaces/team", text: "ask me" });
    const message = await waitUntil(() => r.accepted.find((m) => m.text === "ask me"), "the message");
    const question = { id: "q42", text: "Ship it?", options: ["yes", "no"], allowText: false };
    const receipt = await r.adapter.buttons?.ask(targetOf(message), question);
    const card = receipt?.messageId ?? "";
    expect((await r.fake.tap(card, 0)).body).toBe("{}");
    await waitUntil(() => r.accepted.find((m) => m.answers?.questionId === "q42"), "the tap");
    expect(r.accepted.find((m) => m.answers)).toMatchObject({ text: "1", chatId: "spaces/team", threadId: message.threadId, userId: "users/alice" });
    const again = JSON.parse((await r.fake.tap(card, 1)).body) as unknown;
    expect(again).toEqual({ actionResponse: { type: "NEW_MESSAGE" }, text: "Already answered.", privateMessageViewer: { name: "users/alice" } });
    const stranger = JSON.parse((await r.fake.tap(card, 0, "users/mallory")).body) as unknown;
    expect(stranger).toMatchObject({ text: "This question is not yours to answer.", privateMessageViewer: { name: "users/mallory" } });
    await r.adapter.buttons?.close(targetOf(message), card, question, "Ship it?\nyes: chosen by Alice");
    const closed = r.fake.messages("spaces/team").find((m) => m.name === card);
    expect(closed?.text).toBe("Ship it?\nyes: chosen by Alice");
    expect(closed?.cardsV2).toBeUndefined();
  });
});
