import { describe, expect, it } from "vitest";
import { markdownToWhatsApp, reconnectDelay, backoffCeiling, toSendJid, translateMessage, userIdFromJid } from "../../daemon/adapters/whatsapp/index.js";
import { seededRandom } from "../../shared/random.js";
import { BOT_ACCOUNT, directByPhone, groupText, lidJid, pnJid } from "../fakes/baileys-socket.js";

const SELF = [pnJid(BOT_ACCOUNT.phone, 7), lidJid(BOT_ACCOUNT.lid, 7)];

describe("translateMessage", () => {
  it("unwraps disappearing and view-once wrappers", () => {
    const msg = directByPhone("4915111111111", "");
    msg.message = { ephemeralMessage: { message: { extendedTextMessage: { text: "vanishing words" } } } };
    const t = translateMessage(msg, SELF);
    expect(t.ok && t.draft.text).toBe("vanishing words");
  });

  it("skips reactions, protocol messages, status broadcasts and the bot's own account on another device", () => {
    const reaction = directByPhone("4915111111111", "");
    reaction.message = { reactionMessage: { text: "👍", key: { id: "X" } } };
    const revoke = directByPhone("4915111111111", "");
    revoke.message = { protocolMessage: { type: 0 } };
    const status = directByPhone("4915111111111", "story");
    status.key.remoteJid = "status@broadcast";
    status.key.participant = pnJid("4915111111111");
    const ownDevice = groupText("120363000000000001@g.us", pnJid(BOT_ACCOUNT.phone, 3), "from my phone");
    expect([reaction, revoke, status, ownDevice].map((m) => translateMessage(m, SELF).ok)).toEqual([false, false, false, false]);
  });

  it("drops device suffixes from sender and chat ids", () => {
    const msg = directByPhone("4915111111111", "hi");
    msg.key.remoteJid = pnJid("4915111111111", 12);
    const t = translateMessage(msg, SELF);
    expect(t.ok && [t.draft.userId, t.draft.chatId]).toEqual(["+4915111111111", pnJid("4915111111111")]);
  });

  it("does not take a mention of the bot's digits inside other text as a leading mention", () => {
    const msg = groupText("120363000000000001@g.us", lidJid("230000000000007"), `@${BOT_ACCOUNT.lid}9 hi`, {
      mentions: [lidJid(`${BOT_ACCOUNT.lid}9`)],
    });
    const t = translateMessage(msg, SELF);
    expect(t.ok && [t.draft.mentioned, t.draft.text]).toEqual([false, `@${BOT_ACCOUNT.lid}9 hi`]);
  });
});

describe("ids", () => {
  it("maps JIDs to the ids the allowlist uses and back", () => {
    expect(userIdFromJid("4915111111111:4@s.whatsapp.net")).toBe("+4915111111111");
    expect(userIdFromJid("4915111111111@c.us")).toBe("+4915111111111");
    expect(userIdFromJid("210000000000042:2@lid")).toBe("210000000000042@lid");
    expect(toSendJid("+49 151 1111 1111")).toBe("4915111111111@s.whatsapp.net");
    expect(toSendJid("210000000000042@lid")).toBe("210000000000042@lid");
  });
});

describe("markdownToWhatsApp", () => {
  it("renders emphasis, headings, links and bullets, leaves code alone, and never grows the text", () => {
    const md = "# Plan\n**bold**, *it*, ~~gone~~, [docs](https://x.test)\n* one\n`**raw**`\n```\n**block**\n```";
    const out = markdownToWhatsApp(md);
    expect(out).toBe("*Plan*\n*bold*, _it_, ~gone~, docs (https://x.test)\n- one\n`**raw**`\n```\n**block**\n```");
    expect(out.length).toBeLessThanOrEqual(md.length);
  });
});

describe("reconnectDelay", () => {
  it("stays within [ceiling/2, ceiling) and the ceiling grows to a cap", () => {
    const random = seededRandom("backoff");
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = backoffCeiling(attempt);
      for (let i = 0; i < 20; i++) {
        const d = reconnectDelay(attempt, random);
        expect(d).toBeGreaterThanOrEqual(ceiling / 2);
        expect(d).toBeLessThan(ceiling);
      }
    }
    expect(backoffCeiling(1)).toBeGreaterThan(backoffCeiling(0));
    expect(backoffCeiling(50)).toBe(60_000);
  });
});
