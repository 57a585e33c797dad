/** Identity links on the real file store: codes expire, work once, one per person; links survive a restart; the config's checks. */
import { describe, expect, it, onTestFinished } from "vitest";
import { parseConfig } from "../../../daemon/config/load.js";
import { hashLinkCode, IdentityLinks } from "../../../daemon/core/identity-links.js";
import { openStore } from "../../../daemon/state/store.js";
import type { Store } from "../../../daemon/vocabulary/store.js";
import { createManualClock } from "../../../shared/clock.js";
import { seededRandom } from "../../../shared/random.js";
import { tempDir } from "../../helpers/emulator.js";

/** Stores a test closed itself: not closed again when it finishes. */
const closed = new WeakSet<Store>();

const tg = { platform: "telegram", accountId: "tg", userId: "5001" };
const dc = { platform: "discord", accountId: "dc", userId: "7001" };

async function setup(dataDir?: string) {
  let dir = dataDir;
  if (!dir) {
    const made = tempDir("links-unit-");
    onTestFinished(made.remove);
    dir = made.path;
  }
  const clock = createManualClock(Date.parse("2026-11-25T10:00:00Z"));
  const store = await openStore({ dataDir: dir, clock });
  onTestFinished(async () => {
    if (!closed.has(store)) await store.close();
  });
  const links = new IdentityLinks({ store, clock, random: seededRandom(4), configured: () => [], platformOf: () => undefined });
  const codeHash = (code: string) => hashLinkCode(code);
  return { links, clock, store, dir, codeHash };
}

describe("identity links", () => {
  it("a code links once, within 10 minutes, and a newer code replaces the older", async () => {
    const { links, clock, codeHash } = await setup();
    const first = await links.newCode(tg);
    const second = await links.newCode(tg);
    expect(await links.redeem(dc, codeHash(first))).toEqual({ ok: false, reason: "no_match" });
    clock.advance(10 * 60 * 1000);
    expect(await links.redeem(dc, codeHash(second))).toEqual({ ok: false, reason: "no_match" });
    const third = await links.newCode(tg);
    expect(await links.redeem(tg, codeHash(third))).toEqual({ ok: false, reason: "same" });
    expect(await links.redeem(dc, codeHash(third.toLowerCase()))).toEqual({ ok: true, other: tg });
    expect(await links.redeem(dc, codeHash(third))).toEqual({ ok: false, reason: "no_match" });
    expect(await links.sessionBaseFor({ ...tg, chatType: "direct" })).toBe(await links.sessionBaseFor({ ...dc, chatType: "direct" }));
    expect(await links.sessionBaseFor({ ...tg, chatType: "group" })).toBeUndefined();
  });

  it("keeps links across a restart, and /unlink ends them for every app of the person", async () => {
    const dir = tempDir("links-restart-");
    onTestFinished(dir.remove);
    const a = await setup(dir.path);
    await a.links.redeem(dc, a.codeHash(await a.links.newCode(tg)));
    const base = await a.links.sessionBaseFor({ ...tg, chatType: "direct" });
    await a.store.close();
    closed.add(a.store);
    const b = await setup(dir.path);
    expect(await b.links.sessionBaseFor({ ...dc, chatType: "direct" })).toBe(base);
    expect(await b.links.unlink(dc)).toEqual([tg]);
    expect(await b.links.sessionBaseFor({ ...tg, chatType: "direct" })).toBeUndefined();
    expect(await b.links.unlink(dc)).toBe("none");
  });

  it("accepts configured links with the PostgreSQL state, and refuses links with too few ids", () => {
    const base = {
      service: { apiKey: "svc_org_x" },
      routes: [{ instance: "i" }],
      channels: [{ type: "terminal", id: "t" }],
    };
    expect(() => parseConfig({ ...base, identityLinks: [[{ channel: "t", userId: "1" }]] })).toThrow(/identityLinks\[0\]: must name at least two identities/);
    const links = [
      [
        { channel: "a", userId: "1" },
        { channel: "b", userId: "2" },
      ],
    ];
    expect(parseConfig({ ...base, channels: [], state: { kind: "postgres", url: "postgres://u@127.0.0.1/db" }, identityLinks: links }).identityLinks).toEqual(
      links,
    );
  });

  it("a configured group keeps its person when a reload removes or moves the groups around it, so no group inherits another's conversation", async () => {
    const { store, clock } = await setup();
    const ann = [
      { channel: "tg", userId: "1" },
      { channel: "dc", userId: "1" },
    ];
    const bob = [
      { channel: "tg", userId: "2" },
      { channel: "dc", userId: "2" },
    ];
    let configured = [ann, bob];
    const links = new IdentityLinks({
      store,
      clock,
      random: seededRandom(4),
      configured: () => configured,
      platformOf: (id) => ({ tg: "telegram", dc: "discord" })[id],
    });
    const baseOf = (userId: string) => links.sessionBaseFor({ platform: "telegram", accountId: "tg", userId, chatType: "direct" });
    const annBase = await baseOf("1");
    const bobBase = await baseOf("2");
    expect(annBase).not.toBe(bobBase);
    expect(await links.sessionBaseFor({ platform: "discord", accountId: "dc", userId: "2", chatType: "direct" })).toBe(bobBase);
    configured = [bob]; // ann's group removed: bob keeps his own conversation, not ann's
    expect(await baseOf("2")).toBe(bobBase);
    expect(await baseOf("1")).toBeUndefined();
    configured = [bob, ann]; // moved around: each keeps their own
    expect([await baseOf("1"), await baseOf("2")]).toEqual([annBase, bobBase]);
    // A member added (after the first, whatever it sorts as) keeps the person's conversation.
    configured = [bob, [...ann, { channel: "dc", userId: "0" }]];
    expect(await baseOf("1")).toBe(annBase);
    expect(await links.sessionBaseFor({ platform: "discord", accountId: "dc", userId: "0", chatType: "direct" })).toBe(annBase);
  });

  it("refuses one person's id in two configured groups", () => {
    const base = { service: { apiKey: "svc_org_x" }, routes: [{ instance: "i" }], channels: [{ type: "terminal", id: "t" }] };
    const shared = { channel: "t", userId: "1" };
    expect(() =>
      parseConfig({
        ...base,
        identityLinks: [
          [shared, { channel: "t", userId: "2" }],
          [{ channel: "t", userId: "3" }, shared],
        ],
      }),
    ).toThrow(/identityLinks\[1\]\[1\]: t user 1 is in identityLinks\[0\] too/);
  });
});
