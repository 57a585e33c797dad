import { describe, expect, it } from "vitest";
import { noticeText } from "../../../daemon/core/notices.js";
import { streamModeFor } from "../../../daemon/core/reply-view.js";
import { composeReply, expiredEntries, nextSessionState, StoppableTurns } from "../../../daemon/core/turn.js";
import { sessionKeyOf } from "../../../daemon/vocabulary/keys.js";
import { TurnStoppedError } from "../../../daemon/core/relay-types.js";

describe("expiredEntries", () => {
  const entries = [{ acceptedAt: 1_000 }, { acceptedAt: 5_000 }, { acceptedAt: 9_000 }];

  it("takes the entries accepted longer than the limit ago, and none without a limit", () => {
    expect(expiredEntries(entries, 10_000, 4_000)).toEqual([{ acceptedAt: 1_000 }, { acceptedAt: 5_000 }]);
    expect(expiredEntries(entries, 10_000, 0)).toEqual([]);
  });
});

describe("composeReply", () => {
  it("puts the bridge's notes before the answer, a context reset first", () => {
    expect(composeReply({ text: "hello", contextReset: false }, [])).toBe("hello");
    expect(composeReply({ text: "hello", contextReset: true }, ["a file was skipped"])).toBe(`${noticeText.contextReset}\n\na file was skipped\n\nhello`);
  });

  it("never sends an empty reply", () => {
    expect(composeReply({ text: "  \n", contextReset: false }, [])).toBe(noticeText.emptyAnswer);
  });
});

describe("nextSessionState", () => {
  const answer = { responseId: "resp_2", sessionId: "s1", generation: 3 };

  it("moves the chain on to the answer, noting when its last message came (what a session reset measures from)", () => {
    expect(nextSessionState({ generation: 3, lastResponseId: "resp_1", sessionId: "s1", lastTurnAt: 5 }, answer, 1000)).toEqual({
      generation: 3,
      lastResponseId: "resp_2",
      sessionId: "s1",
      lastTurnAt: 1000,
    });
  });

  it("leaves it when /new started a conversation during the turn, or the answer has no id", () => {
    expect(nextSessionState({ generation: 4 }, answer, 1000)).toBeUndefined();
    expect(nextSessionState({ generation: 3 }, { sessionId: "s1", generation: 3 }, 1000)).toBeUndefined();
  });
});

describe("streamModeFor", () => {
  const both = { edits: { edit: async () => undefined }, appends: { write: async () => undefined } };
  const appendOnly = { appends: { write: async () => undefined } };

  it("edits in place where it can, writes as it comes where it can only append, only when streaming is partial", () => {
    expect(streamModeFor(both, false, "partial")).toBe("edit");
    expect(streamModeFor(appendOnly, false, "partial")).toBe("append");
    expect(streamModeFor(both, false, "off")).toBeUndefined();
  });

  it("finishes a preview started before a restart in place, whatever the setting is now", () => {
    expect(streamModeFor(both, true, "off")).toBe("edit");
  });
});

describe("StoppableTurns", () => {
  const key = sessionKeyOf({ instanceId: "i", sessionBase: "b" });

  it("aborts the session's turn in flight with TurnStoppedError, and says when none runs", () => {
    const turns = new StoppableTurns();
    expect(turns.stop(key)).toBe(false);
    const running = turns.begin(key);
    expect(turns.stop(key)).toBe(true);
    expect(running.signal.reason).toBeInstanceOf(TurnStoppedError);
    running.end();
    expect(turns.stop(key)).toBe(false);
  });

  it("an ended turn does not unregister the session's next one", () => {
    const turns = new StoppableTurns();
    const first = turns.begin(key);
    const second = turns.begin(key);
    first.end();
    expect(turns.stop(key)).toBe(true);
    expect(second.signal.aborted).toBe(true);
  });
});
