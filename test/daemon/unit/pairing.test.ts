import { pino } from "pino";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  CODE_TTL_MS,
  createPairing,
  GUESS_WINDOW_MS,
  hashCode,
  MAX_PENDING,
  MAX_WRONG_PER_APPROVER,
  MAX_WRONG_PER_CHANNEL,
  normalizeCode,
} from "../../../daemon/core/pairing.js";
import { openStore } from "../../../daemon/state/store.js";
import { createManualClock } from "../../../shared/clock.js";
import { seededRandom } from "../../../shared/random.js";
import { tempDir } from "../../helpers/emulator.js";

async function setup() {
  const dir = tempDir("pairing-unit-");
  onTestFinished(dir.remove);
  const clock = createManualClock(Date.parse("2026-11-24T10:00:00Z"));
  const store = await openStore({ dataDir: dir.path, clock });
  onTestFinished(() => store.close());
  const pairing = createPairing({ store, clock, random: seededRandom(1), logger: pino({ level: "silent" }) });
  const sender = (n: number) => ({ userId: String(n), userName: `u${n}`, platform: "telegram", chatId: String(n) });
  const codeOf = async (n: number) => {
    const r = await pairing.request("tg", sender(n));
    if (r.kind !== "code") throw new Error(`no code: ${r.kind}`);
    return r.code;
  };
  return { pairing, clock, store, sender, codeOf };
}

describe("pairing", () => {
  it("draws 8-character codes from the unambiguous alphabet, and people may type them loosely", async () => {
    const { codeOf } = await setup();
    const code = await codeOf(1);
    expect(code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    expect(normalizeCode(` ${code.slice(0, 4).toLowerCase()}-${code.slice(4)} `)).toBe(code);
  });

  it("keeps at most MAX_PENDING requests per channel; the next stranger is told to try later", async () => {
    const { pairing, codeOf, sender } = await setup();
    for (let i = 0; i < MAX_PENDING; i++) await codeOf(i);
    expect((await pairing.request("tg", sender(99))).kind).toBe("full");
    // Another channel has its own room.
    expect((await pairing.request("dc", sender(99))).kind).toBe("code");
  });

  it("a code works once and only before it expires, and only on its channel", async () => {
    const { pairing, clock, codeOf } = await setup();
    const code = await codeOf(1);
    expect((await pairing.approve("dc", hashCode("dc", code), "cli")).ok).toBe(false);
    const ok = await pairing.approve("tg", hashCode("tg", code), "cli");
    expect(ok.ok && ok.user.userId).toBe("1");
    expect(pairing.isApproved("tg", new Set(["1"]))).toBe(true);
    expect((await pairing.approve("tg", hashCode("tg", code), "cli")).ok).toBe(false);
    const late = await codeOf(2);
    clock.advance(CODE_TTL_MS);
    expect(await pairing.approve("tg", hashCode("tg", late), "cli")).toEqual({ ok: false, reason: "no_match" });
    expect(pairing.isApproved("tg", new Set(["2"]))).toBe(false);
  });

  it("approves a code once, also when two approvals of it race", async () => {
    const { pairing, codeOf } = await setup();
    const hash = hashCode("tg", await codeOf(1));
    const results = await Promise.all([pairing.approve("tg", hash, "cli"), pairing.approve("tg", hash, "chat:owner")]);
    expect(results.map((r) => r.ok).sort()).toEqual([false, true]);
  });

  it("bounds guessing per approver and per channel, until the window passes", async () => {
    const { pairing, clock, codeOf } = await setup();
    const code = await codeOf(1);
    const wrong = hashCode("tg", "WRONGWRO");
    for (let i = 0; i < MAX_WRONG_PER_APPROVER; i++) expect((await pairing.approve("tg", wrong, "chat:owner")).ok).toBe(false);
    // This approver is blocked even with the right code; another one is not yet.
    expect(await pairing.approve("tg", hashCode("tg", code), "chat:owner")).toMatchObject({ ok: false, reason: "rate_limited" });
    for (let i = MAX_WRONG_PER_APPROVER; i < MAX_WRONG_PER_CHANNEL; i++) await pairing.approve("tg", wrong, `chat:guesser${i}`);
    expect(await pairing.approve("tg", hashCode("tg", code), "cli")).toMatchObject({ ok: false, reason: "rate_limited" });
    clock.advance(GUESS_WINDOW_MS);
    expect((await pairing.approve("tg", hashCode("tg", code), "cli")).ok).toBe(true);
  });

  it("stores no code, lists no hash, and revokes", async () => {
    const { pairing, store, codeOf } = await setup();
    const code = await codeOf(1);
    await codeOf(2);
    await pairing.approve("tg", hashCode("tg", code), "cli");
    expect(
      JSON.stringify(
        store
          .kv("pairing")
          .keys()
          .map((k) => store.kv("pairing").get(k)),
      ),
    ).not.toContain(code);
    const [listed] = pairing.list("tg");
    expect(listed?.approved.map((a) => a.userId)).toEqual(["1"]);
    expect(listed?.pending.map((p) => p.userId)).toEqual(["2"]);
    expect(JSON.stringify(listed)).not.toContain("codeHash");
    expect(await pairing.revoke("tg", "1")).toBe(true);
    expect(await pairing.revoke("tg", "1")).toBe(false);
    expect(pairing.isApproved("tg", new Set(["1"]))).toBe(false);
  });
});
