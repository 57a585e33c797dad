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
import type { TeamsChannelConfig } from "../../daemon/adapters/teams/config.js";
import { createTeamsAdapter } from "../../daemon/adapters/teams/index.js";
import { INFORMATIVE_TEXT, STREAM_LIMIT_MS } from "../../daemon/adapters/teams/streams.js";
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
const clock = createSteppableClock();
/** How far Teams' clock is ahead of the adapter's (a stream Teams ended for its time that the adapter does not know of). */
let teamsAhead = 0;
let channel: TeamsChannelConfig;

/** An adapter on this test's fake and durable state (a second one is the daemon's next life). */
function adapterOn(deps: { clock: typeof clock }): ChatAdapter {
  return createTeamsAdapter(
    channel,
    {
      logger: pino({ level: "silent" }),
      state: { get: <T>(k: string) => state.get(k) as T | undefined, set: async (k, v) => void state.set(k, v) },
      dataDir: "/nonexistent",
      clock: deps.clock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { onListening: (url) => fake.setBotEndpoint(url) },
  );
}

beforeAll(async () => {
  fake = await createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT, now: () => clock.now() + teamsAhead });
  channel = {
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
  adapter = adapterOn({ clock });
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

describe("the informative update a turn starts with in a personal chat", () => {
  it("opens the stream the reply then fills: one stream, the status first, the text from the next sequence on", async () => {
    const target = await chat("a:info-1");
    await adapter.sendTyping(target);
    const [opening] = fake.streamActivities("a:info-1");
    expect(opening).toMatchObject({ type: "typing", streamType: "informative", streamSequence: 1, text: INFORMATIVE_TEXT, status: 201 });
    // A progress bar, not a message; refreshing the indicator sends nothing more while the stream is open.
    expect(fake.messages("a:info-1")).toEqual([]);
    await adapter.sendTyping(target);
    expect(fake.streamActivities("a:info-1")).toHaveLength(1);
    expect(fake.typing("a:info-1")).toBe(0);
    const id = (await adapter.send(target, "The answer", { format: "markdown", final: false }))?.messageId ?? "";
    expect(edits().mayBeOpen(id)).toBe(true);
    await edits().edit(target, id, "The answer is 42", { format: "markdown", final: true });
    expect(fake.messages("a:info-1")).toMatchObject([{ id, text: "The answer is 42", stream: "final", informative: [INFORMATIVE_TEXT], edits: 0 }]);
    expect(fake.streamActivities("a:info-1").map((a) => [a.streamType, a.streamSequence, a.status])).toEqual([
      ["informative", 1, 201],
      ["streaming", 2, 202],
      ["final", 3, 202],
    ]);
    expect(fake.overlappingStreams()).toBe(0);
  });

  it("is ended by a reply that is not streamed (the whole text as the final message), and the next turn opens a new one", async () => {
    const target = await chat("a:info-2");
    await adapter.sendTyping(target);
    const receipt = await adapter.send(target, "Short answer", { format: "markdown" });
    expect(fake.messages("a:info-2")).toMatchObject([{ id: receipt?.messageId, text: "Short answer", stream: "final" }]);
    await adapter.sendTyping(target);
    expect(fake.streamActivities("a:info-2").map((a) => a.streamType)).toEqual(["informative", "final", "informative"]);
    expect(fake.overlappingStreams()).toBe(0);
  });

  it("is a plain typing activity in a group chat, where Teams does not stream", async () => {
    const target = await chat("19:info-group@thread.v2", "groupChat");
    await adapter.sendTyping(target);
    expect(fake.typing("19:info-group@thread.v2")).toBe(1);
    expect(fake.streamActivities("19:info-group@thread.v2")).toEqual([]);
  });

  it("after Teams ended the stream for its time, the reply goes as a message of its own", async () => {
    const target = await chat("a:info-3");
    await adapter.sendTyping(target);
    teamsAhead = STREAM_LIMIT_MS;
    try {
      const id = (await adapter.send(target, "Late", { format: "markdown", final: false }))?.messageId ?? "";
      expect(fake.streamActivities("a:info-3").map((a) => [a.streamType, a.status])).toEqual([
        ["informative", 201],
        ["streaming", 403],
        ["streaming", 201],
      ]);
      expect(fake.messages("a:info-3")).toMatchObject([{ id, text: "Late", stream: "streaming" }]);
    } finally {
      teamsAhead = 0;
    }
  });
});

describe("a stream Teams ended for its time (two minutes)", () => {
  it("is finished by updating the message, as the Agents SDK does", async () => {
    const target = await chat("a:expired-1");
    const id = (await adapter.send(target, "Slow", { format: "markdown", final: false }))?.messageId ?? "";
    teamsAhead = STREAM_LIMIT_MS;
    try {
      await edits().edit(target, id, "Slow answer", { format: "markdown", final: false });
    } finally {
      teamsAhead = 0;
    }
    expect(fake.streamActivities("a:expired-1").at(-1)).toMatchObject({ streamType: "streaming", status: 403 });
    expect(fake.messages("a:expired-1")).toMatchObject([{ id, text: "Slow answer", stream: "final", timedOut: true, edits: 1 }]);
    expect(edits().mayBeOpen(id)).toBe(false);
  });
});

describe("a stream an earlier life of the daemon left open", () => {
  it("keeps showing what it streamed until the final text, which ends it by its id with a higher sequence, never updated in place", async () => {
    const target = await chat("a:restart-1");
    const id = (await adapter.send(target, "Before", { format: "markdown", final: false }))?.messageId ?? "";
    await edits().edit(target, id, "Before the kill", { format: "markdown", final: false });
    // The next life, from the same durable state (not started: its endpoint is not needed to reply).
    const next = adapterOn({ clock });
    expect(next.edits?.mayBeOpen?.(id)).toBe(true);
    await next.edits?.edit(target, id, "Before the kill, and after", { format: "markdown", final: false });
    expect(fake.messages("a:restart-1")).toMatchObject([{ id, text: "Before the kill", stream: "streaming" }]);
    await next.edits?.end?.(target, id, "Before the kill, and after it");
    expect(fake.messages("a:restart-1")).toMatchObject([{ id, text: "Before the kill, and after it", stream: "final", edits: 0 }]);
    expect(fake.streamActivities("a:restart-1").map((a) => [a.streamType, a.streamSequence, a.status])).toEqual([
      ["streaming", 1, 201],
      ["streaming", 2, 202],
      ["final", 3, 202],
    ]);
    expect(next.edits?.mayBeOpen?.(id)).toBe(false);
  });

  it("is not tried once its two minutes are over: the message is updated", async () => {
    const target = await chat("a:restart-2");
    const id = (await adapter.send(target, "Long ago", { format: "markdown", final: false }))?.messageId ?? "";
    const later = createSteppableClock();
    later.advance(STREAM_LIMIT_MS);
    teamsAhead = STREAM_LIMIT_MS;
    try {
      const next = adapterOn({ clock: later });
      expect(next.edits?.mayBeOpen?.(id)).toBe(false);
      await next.edits?.edit(target, id, "Long ago: done", { format: "markdown", final: true });
    } finally {
      teamsAhead = 0;
    }
    expect(fake.messages("a:restart-2")).toMatchObject([{ id, text: "Long ago: done", edits: 1 }]);
    expect(fake.streamActivities("a:restart-2")).toHaveLength(1);
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
