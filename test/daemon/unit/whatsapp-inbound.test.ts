import { describe, expect, it } from "vitest";
import { markdownToWhatsApp } from "../../../daemon/adapters/whatsapp/format.js";
import { toSendJid, userIdFromJid } from "../../../daemon/adapters/whatsapp/ids.js";
import { mediaOfMessage, translateMessage, type TranslateContext } from "../../../daemon/adapters/whatsapp/inbound.js";
import { BOT_ACCOUNT, directByPhone, documentFrom, groupText, imageFrom, lidJid, pnJid } from "../../fakes/baileys-socket.js";

const SELF = [pnJid(BOT_ACCOUNT.phone, 7), lidJid(BOT_ACCOUNT.lid, 7)];
const NOW = 1_700_000_000_000;
const CONTEXT: TranslateContext = { self: SELF, accountId: "wa", now: NOW };

describe("translateMessage", () => {
  it("unwraps disappearing and view-once wrappers", () => {
    const msg = directByPhone("4915111111111", "");
    msg.message = { ephemeralMessage: { message: { extendedTextMessage: { text: "vanishing words" } } } };
    expect(translateMessage(msg, CONTEXT)?.text).toBe("vanishing words");
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
    expect([reaction, revoke, status, ownDevice].map((m) => translateMessage(m, CONTEXT) !== undefined)).toEqual([false, false, false, false]);
  });

  it("drops device suffixes from sender and chat ids", () => {
    const msg = directByPhone("4915111111111", "hi");
    msg.key.remoteJid = pnJid("4915111111111", 12);
    const t = translateMessage(msg, CONTEXT);
    expect(t && [t.userId, t.chatId]).toEqual(["+4915111111111", pnJid("4915111111111")]);
  });

  it("does not take a mention of the bot's digits inside other text as a leading mention", () => {
    const msg = groupText("120363000000000001@g.us", lidJid("230000000000007"), `@${BOT_ACCOUNT.lid}9 hi`, {
      mentions: [lidJid(`${BOT_ACCOUNT.lid}9`)],
    });
    const t = translateMessage(msg, CONTEXT);
    expect(t && [t.mentioned, t.text]).toEqual([false, `@${BOT_ACCOUNT.lid}9 hi`]);
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

describe("translateMessage into the core's message", () => {
  it("gives a direct message the platform, account, sender and send time the core keys on, and no mention flag", () => {
    const msg = directByPhone("4915111111111", "hello there", { id: "M1", lidAlt: "210000000000042", pushName: "Ana" });
    expect(translateMessage(msg, CONTEXT)).toEqual({
      platform: "whatsapp",
      accountId: "wa",
      chatId: pnJid("4915111111111"),
      chatType: "direct",
      userId: "+4915111111111",
      userAliases: ["210000000000042@lid"],
      userName: "Ana",
      messageId: "M1",
      text: "hello there",
      sentAt: 1_767_225_600_000,
    });
  });

  it("dates a message without a timestamp at the context's now", () => {
    const msg = directByPhone("4915111111111", "no time");
    msg.messageTimestamp = null;
    expect(translateMessage(msg, CONTEXT)?.sentAt).toBe(NOW);
  });

  it("marks a group message that mentions or replies to the bot, and strips the leading mention", () => {
    const group = "120363000000000001@g.us";
    const mention = groupText(group, pnJid("4915111111111"), `@${BOT_ACCOUNT.lid} status?`, { mentions: [lidJid(BOT_ACCOUNT.lid)] });
    const reply = groupText(group, pnJid("4915111111111"), "and now?", { replyTo: { participant: pnJid(BOT_ACCOUNT.phone), stanzaId: "B1" } });
    const aside = groupText(group, pnJid("4915111111111"), "lunch?");
    const read = [mention, reply, aside].map((m) => translateMessage(m, CONTEXT)).map((t) => t && [t.chatType, t.mentioned, t.text]);
    expect(read).toEqual([
      ["group", true, "status?"],
      ["group", true, "and now?"],
      ["group", false, "lunch?"],
    ]);
  });

  it("tells the caller why a message was skipped", () => {
    const reasons: string[] = [];
    const own = directByPhone("4915111111111", "echo");
    own.key.fromMe = true;
    const empty = directByPhone("4915111111111", "   ");
    for (const m of [own, empty]) translateMessage(m, { ...CONTEXT, onSkip: (reason) => reasons.push(reason) });
    expect(reasons).toEqual(["own message", "no text or supported media"]);
  });

  it("keeps a captionless file's message (empty text) and describes the file without fetching it", () => {
    const doc = documentFrom("4915111111111", "../../etc/report.pdf", Buffer.alloc(10), { declaredBytes: 2048 });
    const photo = imageFrom("4915111111111", Buffer.alloc(5), { id: "P1", mimetype: "image/png" });
    expect(translateMessage(doc, CONTEXT)?.text).toBe("");
    expect(mediaOfMessage(doc)).toEqual({ kind: "document", fileName: "report.pdf", mimeType: "application/pdf", declaredBytes: 2048 });
    expect(mediaOfMessage(photo)).toEqual({ kind: "photo", fileName: "photo-P1.png", mimeType: "image/png", declaredBytes: 5 });
    expect(mediaOfMessage(directByPhone("4915111111111", "just text"))).toBeUndefined();
  });
});
