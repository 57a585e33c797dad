/**
 * What is particular to Teams, against the fake Teams (test/fakes/teams.ts:
 * its own signing keys as OpenID metadata, its token endpoint, its connector):
 * forged, expired, wrong-audience and wrong-tenant requests refused before
 * anything reaches the core; the connector's 429 and 5xx as the core's
 * SendError; the bot's token fetched once and reused; a file downloaded; the
 * conversation reference kept across a restart (proactive messages).
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teamsChannelSchema } from "../../daemon/adapters/teams/config.js";
import { createTeamsAdapter } from "../../daemon/adapters/teams/index.js";
import { type ChatAdapter, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { wavFile } from "../helpers/audio-containers.js";
import { createFakeTeams, type FakeTeams } from "../fakes/teams.js";
import { testSink } from "../fakes/sink.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";

const APP_ID = "00000000-0000-4000-8000-000000000b01";
const APP_PASSWORD = "endpoint~TestPasswordSecret";
const TENANT = "11111111-1111-4111-8111-111111111111";
const PERSONAL = "a:personal-alice";

let fake: FakeTeams;
const state = new Map<string, unknown>();
const received: InboundMessage[] = [];
const logs: string[] = [];
const clock = createSteppableClock();

function adapterFor(overrides: object = {}): ChatAdapter {
  const channel = {
    ...teamsChannelSchema.parse({
      type: "teams",
      app_id: APP_ID,
      app_password: APP_PASSWORD,
      tenant_id: TENANT,
      http: { port: 0 },
      openIdMetadata: fake.openIdMetadata,
      tokenEndpoint: fake.tokenEndpoint,
      access: { mode: "open" },
      ...overrides,
    }),
    id: "tm",
  };
  return createTeamsAdapter(
    channel,
    {
      logger: pino({ level: "debug" }, { write: (line: string) => void logs.push(line) }),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (url) => fake.setBotEndpoint(url) },
  );
}

let adapter: ChatAdapter;
const sink = testSink({ accept: (m) => void received.push(m) });
const target = { platform: "teams", accountId: "tm", chatId: PERSONAL, chatType: "direct" as const };

beforeAll(async () => {
  fake = await createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT });
  adapter = adapterFor();
  await adapter.start(sink);
});
afterAll(async () => {
  await adapter.stop();
  await fake.close();
});

describe("the messaging endpoint", () => {
  it("takes an activity with a valid token, and answers 200 once the core has it", async () => {
    const { status } = await fake.say("hello", { id: "ok-1" });
    expect(status).toBe(200);
    expect(received.find((m) => m.messageId === "ok-1")).toMatchObject({
      chatId: PERSONAL,
      chatType: "direct",
      userId: "aad-alice",
      userAliases: ["29:alice"],
      text: "hello",
    });
  });

  it.each([
    ["without a token", { none: true }, 401],
    ["forged (signed by a key the metadata does not list)", { foreignKey: true }, 401],
    ["expired", { claims: { exp: Math.floor(Date.now() / 1000) - 3600 } }, 401],
    ["for another bot", { claims: { aud: "99999999-0000-4000-8000-000000000000" } }, 401],
    ["from another tenant (the token says so)", { claims: { tid: "22222222-2222-4222-8222-222222222222" } }, 401],
    ["for another service URL (replies would go elsewhere)", { claims: { serviceurl: "http://127.0.0.1:9/evil/" } }, 401],
  ])("refuses a request %s, and nothing reaches the core", async (_what, forge, expected) => {
    const id = `refused-${received.length}-${Math.random()}`;
    const { status } = await fake.say("let me in", { id, forge });
    expect(status).toBe(expected);
    expect(received.some((m) => m.messageId === id)).toBe(false);
    expect(logs.join("")).not.toContain("Bearer ey");
  });

  it("refuses an activity from another tenant (single-tenant bot), and nothing reaches the core", async () => {
    const { status } = await fake.say("from elsewhere", { id: "other-tenant", tenantId: "22222222-2222-4222-8222-222222222222" });
    expect(status).toBe(403);
    expect(received.some((m) => m.messageId === "other-tenant")).toBe(false);
  });

  it("takes a token signed with a key rolled over since it read the metadata", async () => {
    fake.rollKeys();
    // Past the floor between two reads for an unknown key (forged key ids cannot make it read on every request).
    clock.advance(61_000);
    const { status } = await fake.say("after a rollover", { id: "rolled" });
    expect(status).toBe(200);
  });

  it("hands a channel post over only as a group message, mentioned when it @mentions the bot, the mention taken out", async () => {
    await fake.say("deploy please", { id: "ch-1", conversationType: "channel" });
    await fake.say("just chatting", { id: "ch-2", conversationType: "channel", mention: false });
    // The one thread rule: the post's reply chain is the channel's thread, rooted by the post itself.
    expect(received.find((m) => m.messageId === "ch-1")).toMatchObject({
      chatId: "19:general@thread.tacv2",
      threadId: "ch-1",
      startsThread: true,
      chatType: "group",
      mentioned: true,
      text: "deploy please",
      groupAliases: ["19:team@thread.tacv2"],
    });
    expect(received.find((m) => m.messageId === "ch-2")).toMatchObject({ mentioned: false });
  });

  it("downloads a file sent in a personal chat", async () => {
    const url = fake.file("notes.txt", Buffer.from("the notes"));
    await fake.say("", {
      id: "file-1",
      attachments: [{ contentType: "application/vnd.microsoft.teams.file.download.info", name: "notes.txt", content: { downloadUrl: url, fileType: "txt" } }],
    });
    const message = received.find((m) => m.messageId === "file-1");
    expect(message?.attachments?.[0]).toMatchObject({ fileName: "notes.txt", kind: "document", mimeType: "text/plain" });
    expect(message?.attachments?.[0]?.data.toString()).toBe("the notes");
  });

  it("passes a voice note's length, read from the audio file (Teams does not say it), for transcription's limit", async () => {
    const url = fake.file("Voice message.wav", wavFile(3.5));
    await fake.say("", {
      id: "voice-1",
      attachments: [
        { contentType: "application/vnd.microsoft.teams.file.download.info", name: "Voice message.wav", content: { downloadUrl: url, fileType: "wav" } },
      ],
    });
    expect(received.find((m) => m.messageId === "voice-1")?.attachments?.[0]).toMatchObject({ kind: "audio", mimeType: "audio/wav", seconds: 3.5 });
    // Not audio, or not a container it reads: no length, the file still passed on.
    const odd = fake.file("Voice message.ogg", Buffer.from("not really ogg"));
    await fake.say("", {
      id: "voice-2",
      attachments: [
        { contentType: "application/vnd.microsoft.teams.file.download.info", name: "Voice message.ogg", content: { downloadUrl: odd, fileType: "ogg" } },
      ],
    });
    const second = received.find((m) => m.messageId === "voice-2")?.attachments?.[0];
    expect(second).toMatchObject({ kind: "audio", fileName: "Voice message.ogg" });
    expect(second?.seconds).toBeUndefined();
  });
});

describe("replies", () => {
  it("go to the conversation's serviceUrl with one token, fetched once and reused", async () => {
    const before = fake.tokenRequests();
    await adapter.sendTyping(target);
    // In a personal chat the indicator is Teams' informative stream update, which the next reply ends (teams-streaming.test.ts).
    expect(fake.streamActivities(PERSONAL).at(-1)).toMatchObject({ type: "typing", streamType: "informative", status: 201 });
    await adapter.send(target, "one", { format: "markdown" });
    await adapter.send(target, "two", { format: "markdown" });
    expect(fake.messages(PERSONAL).map((m) => m.text)).toEqual(expect.arrayContaining(["one", "two"]));
    expect(fake.tokenRequests() - before).toBeLessThanOrEqual(1);
  });

  it("fail with the connector's Retry-After on 429, transient on 5xx, permanent on 403", async () => {
    fake.failNext({ status: 429, retryAfter: "7" }, { status: 503 }, { status: 403 });
    const throttled = await adapter.send(target, "x", { format: "plain" }).catch((e: unknown) => e);
    expect(throttled).toBeInstanceOf(SendError);
    expect(throttled).toMatchObject({ permanent: false, retryAfterMs: 7000, status: 429 });
    expect(await adapter.send(target, "x", { format: "plain" }).catch((e: unknown) => e)).toMatchObject({ permanent: false, status: 503 });
    expect(await adapter.send(target, "x", { format: "plain" }).catch((e: unknown) => e)).toMatchObject({ permanent: true, status: 403 });
  });

  it("send a file in a personal chat through the consent flow: the card, the person's yes, the upload, the file card", async () => {
    await adapter.files?.send(target, { path: "out/r.txt", fileName: "r.txt", mimeType: "text/plain", kind: "document", data: Buffer.from("report") });
    await waitUntil(
      () => fake.messages(PERSONAL).find((m) => m.attachments.some((a) => (a as { contentType?: string }).contentType?.endsWith("file.info"))),
      "the file card",
    );
    expect(fake.uploaded("r.txt")?.toString()).toBe("report");
  });

  it("stream with Teams' own protocol in a personal chat (more in teams-streaming.test.ts)", async () => {
    const receipt = await adapter.send(target, "Thinking", { format: "markdown", final: false });
    await adapter.edits?.edit(target, receipt?.messageId ?? "", "Thinking about it: done", { format: "markdown", final: true });
    const shown = fake.messages(PERSONAL).find((m) => m.id === receipt?.messageId);
    expect(shown).toMatchObject({ text: "Thinking about it: done", stream: "final" });
  });

  it("reach a chat after a restart from the kept conversation reference (scheduled prompts, proactive messages)", async () => {
    const second = adapterFor();
    await second.send(target, "proactive hello", { format: "plain" });
    expect(fake.messages(PERSONAL).at(-1)?.text).toBe("proactive hello");
  });

  it("are refused permanently with a clear error when the app password is wrong", async () => {
    const wrong = adapterFor({ app_password: "not-the-password" });
    const error = await wrong.send(target, "x", { format: "plain" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ permanent: true, message: expect.stringContaining("refused the app id and password") });
    expect(String((error as Error).message)).not.toContain("not-the-password");
  });
});

describe("the anonymous mode", () => {
  it("is refused by the config unless the endpoint listens on a loopback address", () => {
    const parsed = teamsChannelSchema.safeParse({ type: "teams", app_id: APP_ID, auth: "anonymous-local-tools-only", http: { host: "0.0.0.0" } });
    expect(parsed.success).toBe(false);
    expect(teamsChannelSchema.safeParse({ type: "teams", app_id: APP_ID, auth: "anonymous-local-tools-only" }).success).toBe(true);
    // Without the words, a missing password is an error, not an anonymous bot.
    expect(teamsChannelSchema.safeParse({ type: "teams", app_id: APP_ID }).success).toBe(false);
  });
});
