/**
 * A turn's calls end on its /stop or on the daemon's halt (`eitherSignal`, in place of
 * `AbortSignal.any` on the relay's hot path): the reason is the one that aborted first, and a
 * disposed pair no longer follows its sources.
 */
import { describe, expect, it } from "vitest";
import { eitherSignal } from "../../../daemon/core/service-call.js";

describe("eitherSignal", () => {
  it("aborts with the reason of whichever source aborts first, once", () => {
    const [turn, halt] = [new AbortController(), new AbortController()];
    const { signal } = eitherSignal(turn.signal, halt.signal);
    const reasons: unknown[] = [];
    signal.addEventListener("abort", () => reasons.push(signal.reason));
    expect(signal.aborted).toBe(false);
    halt.abort("halt");
    turn.abort("stop");
    expect(reasons).toEqual(["halt"]);
  });

  it("is aborted at once when a source already is, the first source's reason first", () => {
    const [turn, halt] = [new AbortController(), new AbortController()];
    turn.abort("stop");
    halt.abort("halt");
    expect(eitherSignal(turn.signal, halt.signal).signal.reason).toBe("stop");
    const fresh = new AbortController();
    expect(eitherSignal(fresh.signal, halt.signal).signal.reason).toBe("halt");
  });

  it("once disposed, follows neither source (its listeners are gone)", () => {
    const [turn, halt] = [new AbortController(), new AbortController()];
    const either = eitherSignal(turn.signal, halt.signal);
    either.dispose();
    turn.abort("stop");
    halt.abort("halt");
    expect(either.signal.aborted).toBe(false);
  });
});
