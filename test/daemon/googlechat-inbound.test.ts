/**
 * Google Chat's pure parts: an event as the core's message (direct message,
 * space thread, mention, an app's own message, a tap, what is not a turn), the
 * reply slots of the synchronous answer, and the certificate cache's refresh
 * for a key it does not know (at most once a minute).
 */
import { describe, expect, it } from "vitest";
import { ChatEvent, translateMessage } from "../../daemon/adapters/googlechat/inbound.js";
import { SyncReplies } from "../../daemon/adapters/googlechat/sync-replies.js";
import { createCertCache } from "../../daemon/adapters/googlechat/verify.js";
import { SendError } from "../../daemon/vocabulary/adapter.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";

const NOW = Date.parse("2026-11-28T08:00:00Z");
const ev = (value: unknown) => ChatEvent.parse(value);

describe("translateMessage", () => {
  it("a direct message: the DM space is the chat, no thread, no mention rule", () => {
    const t = translateMessage(
      ev({
        type: "MESSAGE",
        space: { name: "spaces/D1", type: "DM", spaceType: "DIRECT_MESSAGE" },
        message: {
          name: "spaces/D1/messages/M1",
          sender: { name: "users/42", displayName: "Ann", type: "HUMAN" },
          text: " hello ",
          createTime: "2026-11-28T07:59:00Z",
          thread: { name: "spaces/D1/threads/T1" },
        },
      }),
      "gc",
      NOW,
    );
    expect(t).toEqual({
      kind: "message",
      files: [],
      message: {
        platform: "googlechat",
        accountId: "gc",
        chatId: "spaces/D1",
        chatType: "direct",
        userId: "users/42",
        userName: "Ann",
        messageId: "spaces/D1/messages/M1",
        text: "hello",
        sentAt: Date.parse("2026-11-28T07:59:00Z"),
      },
    });
  });

  it("a space message: its thread is the conversation, the mention taken out, mentioned when it names the app", () => {
    const base = {
      type: "MESSAGE",
      space: { name: "spaces/S1", type: "ROOM", spaceType: "SPACE" },
      message: {
        name: "spaces/S1/messages/M2",
        sender: { name: "users/42", type: "HUMAN" },
        text: "@Bot do it",
        argumentText: " do it",
        thread: { name: "spaces/S1/threads/T9" },
        annotations: [{ type: "USER_MENTION", userMention: { user: { name: "users/app", type: "BOT" } } }],
      },
    };
    expect(translateMessage(ev(base), "gc", NOW)).toMatchObject({
      kind: "message",
      message: { chatId: "spaces/S1", chatType: "group", threadId: "T9", text: "do it", mentioned: true, sentAt: NOW },
    });
    const unmentioned = { ...base, message: { ...base.message, annotations: [] } };
    expect(translateMessage(ev(unmentioned), "gc", NOW)).toMatchObject({ message: { mentioned: false } });
  });

  it("an app's message, removal, and an unknown card action are not turns; a tap on an answer button is", () => {
    const space = { name: "spaces/S1", spaceType: "SPACE" };
    expect(
      translateMessage(
        ev({ type: "MESSAGE", space, message: { name: "spaces/S1/messages/B", sender: { name: "users/x", type: "BOT" }, text: "hi" } }),
        "gc",
        NOW,
      ),
    ).toMatchObject({
      kind: "ignore",
    });
    expect(translateMessage(ev({ type: "REMOVED_FROM_SPACE", space }), "gc", NOW)).toMatchObject({ kind: "ignore" });
    const tap = {
      type: "CARD_CLICKED",
      eventTime: "2026-11-28T08:00:01Z",
      space,
      user: { name: "users/42" },
      message: { name: "spaces/S1/messages/Q", thread: { name: "spaces/S1/threads/T9" } },
      common: { invokedFunction: "agent-bridge-answer", parameters: { q: "q7", o: "2" } },
    };
    expect(translateMessage(ev(tap), "gc", NOW)).toMatchObject({
      kind: "tap",
      message: { chatId: "spaces/S1", threadId: "T9", userId: "users/42", text: "2", answers: { questionId: "q7" } },
    });
    expect(translateMessage(ev({ ...tap, common: { invokedFunction: "somethingElse", parameters: {} } }), "gc", NOW)).toMatchObject({ kind: "ignore" });
  });
});

describe("SyncReplies", () => {
  it("gives the first ordinary reply within the window to the waiting request, once", async () => {
    const clock = createSteppableClock();
    const replies = new SyncReplies(clock, 1000);
    const waiting = replies.wait("m1");
    const sent = replies.offer("m1", { text: "hi" });
    expect(sent).toBeDefined();
    expect(replies.offer("m1", { text: "again" })).toBeUndefined();
    const answer = await waiting;
    expect(answer?.body).toEqual({ text: "hi" });
    answer?.written(true);
    await expect(sent).resolves.toEqual({});
  });

  it("expires at the window's end, fails a reply that could not be written, and lets go at once when the request closes", async () => {
    const clock = createSteppableClock();
    const replies = new SyncReplies(clock, 1000);
    const late = replies.wait("m2");
    clock.advance(1000);
    expect(await late).toBeUndefined();
    expect(replies.offer("m2", { text: "late" })).toBeUndefined();

    const failing = replies.wait("m3");
    const sent = replies.offer("m3", { text: "lost?" });
    (await failing)?.written(false);
    await expect(sent).rejects.toBeInstanceOf(SendError);

    const gone = new AbortController();
    const closed = replies.wait("m4", gone.signal);
    gone.abort();
    expect(await closed).toBeUndefined();
    expect(replies.offer("m4", { text: "x" })).toBeUndefined();
  });
});

describe("the certificate cache", () => {
  it("fetches again for an unknown key at most once a minute, and keeps for max-age", async () => {
    const clock = createSteppableClock();
    let fetches = 0;
    const fetchImpl: typeof fetch = async () => {
      fetches++;
      return new Response(JSON.stringify({ k1: "-----BEGIN CERTIFICATE-----" }), { headers: { "cache-control": "public, max-age=3600" } });
    };
    const cache = createCertCache("http://certs", clock, fetchImpl);
    await cache.certs();
    await cache.certs();
    expect(fetches).toBe(1);
    await cache.certs({ refresh: true });
    expect(fetches).toBe(1);
    clock.advance(60_000);
    await cache.certs({ refresh: true });
    expect(fetches).toBe(2);
    clock.advance(3_600_000);
    await cache.certs();
    expect(fetches).toBe(3);
  });

  it("goes on with the certificates it has while the URL fails, asking again a minute later; with none, refuses", async () => {
    const clock = createSteppableClock();
    let up = true;
    let fetches = 0;
    const fetchImpl: typeof fetch = async () => {
      fetches++;
      if (!up) throw new Error("network down");
      return new Response(JSON.stringify({ k1: "-----BEGIN CERTIFICATE-----" }), { headers: { "cache-control": "max-age=60" } });
    };
    const cache = createCertCache("http://certs", clock, fetchImpl);
    await cache.certs();
    up = false;
    clock.advance(61_000);
    await expect(cache.certs()).resolves.toEqual({ k1: "-----BEGIN CERTIFICATE-----" });
    await cache.certs();
    expect(fetches).toBe(2);
    clock.advance(60_000);
    await cache.certs();
    expect(fetches).toBe(3);
    await expect(createCertCache("http://certs", clock, fetchImpl).certs()).rejects.toThrow("network down");
  });
});
