/**
 * Teams' own streaming protocol for a streamed reply in a personal chat
 * (typing activities with streaminfo, then the final message), against the
 * fake Teams, which keeps the protocol's rules; and the fallback to updating
 * the reply in place where the conversation refuses it (group chats,
 * channels, a 4xx from the connector), so a reply always streams somehow.
 */
import pino from "pino";
import { beforeAll, describe, expect, it } from "vitest";
import { teamsChannelSchema } from "../../daemon/adapters/teams/config.js";
import { createTeamsAdapter } from "../../daemon/adapters/teams/index.js";
import type { ChatAdapter, ChatTarget } from "../../daemon/vocabulary/adapter.js";
import { testSink } from "../fakes/sink.js";
import { createFakeTeams, type FakeTeams } from "../fakes/teams.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";

const APP_ID = "00000000-0000-4000-8000-000000000b02";
const APP_PASSWORD = "streaming~TestPasswordSecret";
const TENANT = "11111111-1111-4111-8111-111111111111";

let fake: FakeTeams;
let adapter: ChatAdapter;
const state = new Map<string, unknown>();

beforeAll(async () => {
  fake = await createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT });
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
    }),
    id: "tm",
  };
  adapter = createTeamsAdapter(
    channel,
    {
      logger: pino({ level: "silent" }),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: createSteppableClock(),
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (url) => fake.setBotEndpoint(url) },
  );
  await adapter.start(testSink({ accept: () => undefined }));
  return async () => {
    await adapter.stop();
    await fake.close();
  };
});

/** A conversation of its own for one test (the person writes first, so the bot knows where to reply). */
async function chat(conversationId: string, conversationType: "personal" | "groupChat" | "channel" = "personal"): Promise<ChatTarget> {
  const { status } = await fake.say("hi", { conversationId, conversationType });
  expect(status).toBe(200);
  return { platform: "teams", accountId: "tm", chatId: conversationId, chatType: conversationType === "personal" ? "direct" : "group" };
}

const edits = () => {
  const capability = adapter.edits;
  if (!capability?.end || !capability.mayBeOpen) throw new Error("the Teams adapter has no stream ending");
  return { ...capability, end: capability.end, mayBeOpen: capability.mayBeOpen };
};

describe("a streamed reply in a personal chat", () => {
  it("streams with Teams' protocol: typing updates with rising sequences, then the final message, never an update in place", async () => {
    const target = await chat("a:stream-1");
    const receipt = await adapter.send(target, "Thinking", { format: "markdown", final: false });
    const id = receipt?.messageId ?? "";
    expect(edits().mayBeOpen(id)).toBe(true);
    await edits().edit(target, id, "Thinking about", { format: "markdown", final: false });
    await edits().edit(target, id, "Thinking about it", { format: "markdown", final: false });
    expect(fake.messages("a:stream-1").find((m) => m.id === id)).toMatchObject({ text: "Thinking about it", stream: "streaming", streamUpdates: 3 });
    await edits().edit(target, id, "Thinking about it: done", { format: "markdown", final: true });
    expect(fake.messages("a:stream-1").find((m) => m.id === id)).toMatchObject({ text: "Thinking about it: done", stream: "final", edits: 0 });
    expect(edits().mayBeOpen(id)).toBe(false);
    expect(fake.messages("a:stream-1").filter((m) => m.stream)).toHaveLength(1);
  });

  it("is ended by `end` when its last edit was not final (the core's close of a complete reply)", async () => {
    const target = await chat("a:stream-2");
    const id = (await adapter.send(target, "Part one", { format: "markdown", final: false }))?.messageId ?? "";
    await edits().end(target, id, "Part one");
    expect(fake.messages("a:stream-2").find((m) => m.id === id)).toMatchObject({ text: "Part one", stream: "final" });
    expect(edits().mayBeOpen(id)).toBe(false);
  });

  it("ends the stream with the new text when a preview does not continue what was streamed, then updates in place", async () => {
    const target = await chat("a:stream-3");
    const id = (await adapter.send(target, "Draft: a", { format: "markdown", final: false }))?.messageId ?? "";
    await edits().edit(target, id, "Rewritten", { format: "markdown", final: false });
    expect(fake.messages("a:stream-3").find((m) => m.id === id)).toMatchObject({ text: "Rewritten", stream: "final" });
    await edits().edit(target, id, "Rewritten again", { format: "markdown", final: true });
    expect(fake.messages("a:stream-3").find((m) => m.id === id)).toMatchObject({ text: "Rewritten again", edits: 1 });
  });

  it("keeps streaming through a code block: the core's closing fence of an open block is not streamed", async () => {
    const target = await chat("a:stream-fence");
    const id = (await adapter.send(target, "Code:\n```ts\nconst a = 1;\n```", { format: "markdown", final: false }))?.messageId ?? "";
    expect(fake.messages("a:stream-fence").find((m) => m.id === id)?.text).toBe("Code:\n```ts\nconst a = 1;");
    await edits().edit(target, id, "Code:\n```ts\nconst a = 1;\nconst b = 2;\n```", { format: "markdown", final: false });
    expect(fake.messages("a:stream-fence").find((m) => m.id === id)).toMatchObject({ stream: "streaming", streamUpdates: 2 });
    await edits().edit(target, id, "Code:\n```ts\nconst a = 1;\nconst b = 2;\n```\nDone.", { format: "markdown", final: true });
    expect(fake.messages("a:stream-fence").find((m) => m.id === id)).toMatchObject({
      text: "Code:\n```ts\nconst a = 1;\nconst b = 2;\n```\nDone.",
      stream: "final",
      edits: 0,
    });
  });

  it("falls back to updating the message when the connector refuses the protocol (4xx), and does not ask again there", async () => {
    const target = await chat("a:stream-4");
    fake.failNext({ status: 405 });
    const id = (await adapter.send(target, "Hello", { format: "markdown", final: false }))?.messageId ?? "";
    expect(edits().mayBeOpen(id)).toBe(false);
    await edits().edit(target, id, "Hello there", { format: "markdown", final: true });
    expect(fake.messages("a:stream-4").find((m) => m.id === id)).toMatchObject({ text: "Hello there", edits: 1 });
    expect(fake.messages("a:stream-4").find((m) => m.id === id)?.stream).toBeUndefined();
    const second = (await adapter.send(target, "Again", { format: "markdown", final: false }))?.messageId ?? "";
    expect(fake.messages("a:stream-4").find((m) => m.id === second)?.stream).toBeUndefined();
  });

  it("updates the message in place when Teams refuses a stream mid-reply", async () => {
    const target = await chat("a:stream-5");
    const id = (await adapter.send(target, "One", { format: "markdown", final: false }))?.messageId ?? "";
    fake.failNext({ status: 403 });
    await edits().edit(target, id, "One two", { format: "markdown", final: false });
    expect(fake.messages("a:stream-5").find((m) => m.id === id)).toMatchObject({ text: "One two", edits: 1 });
    expect(edits().mayBeOpen(id)).toBe(false);
  });

  it("throws a transient failure for the core to retry, and streams on the retry", async () => {
    const target = await chat("a:stream-6");
    fake.failNext({ status: 503 });
    expect(await adapter.send(target, "Hi", { format: "markdown", final: false }).catch((e: unknown) => e)).toMatchObject({ permanent: false, status: 503 });
    const id = (await adapter.send(target, "Hi", { format: "markdown", final: false }))?.messageId ?? "";
    expect(fake.messages("a:stream-6").find((m) => m.id === id)).toMatchObject({ stream: "streaming" });
  });
});

describe("a streamed reply outside a personal chat", () => {
  it.each(["groupChat", "channel"] as const)("in a %s is updated in place, without trying the protocol", async (kind) => {
    const conversationId = kind === "groupChat" ? "19:stream-group@thread.v2" : "19:stream-channel@thread.tacv2;messageid=1";
    const target = await chat(conversationId, kind);
    const before = fake.calls().length;
    const id = (await adapter.send(target, "Thinking", { format: "markdown", final: false }))?.messageId ?? "";
    await edits().edit(target, id, "Thinking: done", { format: "markdown", final: true });
    expect(fake.messages(conversationId).find((m) => m.id === id)).toMatchObject({ text: "Thinking: done", edits: 1 });
    expect(
      fake
        .calls()
        .slice(before)
        .map((c) => c.status),
    ).toEqual([200, 200]);
    expect(edits().mayBeOpen(id)).toBe(false);
  });
});

describe("the fake's rules (what real Teams refuses)", () => {
  it("refuses a falling sequence, streaming into an ended stream, and the protocol outside a personal chat", async () => {
    await chat("a:stream-rules");
    await chat("19:rules-group@thread.v2", "groupChat");
    const token = await (
      await fetch(fake.tokenEndpoint, {
        method: "POST",
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: APP_ID, client_secret: APP_PASSWORD }),
      }).then((r) => r.json() as Promise<{ access_token: string }>)
    ).access_token;
    const post = (conversation: string, activity: object) =>
      fetch(`${fake.serviceUrl}v3/conversations/${encodeURIComponent(conversation)}/activities`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(activity),
      });
    const info = (streamType: string, streamSequence: number, streamId?: string) => [
      { type: "streaminfo", streamType, streamSequence, ...(streamId ? { streamId } : {}) },
    ];
    expect((await post("19:rules-group@thread.v2", { type: "typing", text: "a", entities: info("streaming", 1) })).status).toBe(400);
    const first = await post("a:stream-rules", { type: "typing", text: "a", entities: info("streaming", 1) });
    const { id } = (await first.json()) as { id: string };
    expect((await post("a:stream-rules", { type: "typing", text: "ab", entities: info("streaming", 3, id) })).status).toBe(202);
    expect((await post("a:stream-rules", { type: "typing", text: "abc", entities: info("streaming", 2, id) })).status).toBe(400);
    expect((await post("a:stream-rules", { type: "message", text: "abc", entities: info("final", 4, id) })).status).toBe(202);
    expect((await post("a:stream-rules", { type: "typing", text: "abcd", entities: info("streaming", 5, id) })).status).toBe(403);
  });
});
