/**
 * Nostr beyond one-to-one text, against fake relays (NIP-01, NIP-17, NIP-44)
 * and a fake Blossom server (BUD-01/02), with nostr-tools clients as the
 * people: NIP-17 rooms (the set of the author and the `p` tags) as group
 * chats, answered to every member with one message; kind 15 files in
 * (downloaded, checked against `x`, decrypted, a voice note as audio) and out
 * (encrypted, uploaded under a kind 24242 authorization, sent as kind 15).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as nip17 from "nostr-tools/nip17";
import { describe, expect, it, onTestFinished } from "vitest";
import { nostrChannelSchema } from "../../daemon/adapters/nostr/config.js";
import { hexToNpub } from "../../daemon/adapters/nostr/config.js";
import { fileKey } from "../../daemon/adapters/nostr/keys.js";
import { nostrPlatform } from "../../daemon/adapters/nostr/platform.js";
import { type ChatTarget, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { createFakeBlossom, type FakeBlossom } from "../fakes/blossom.js";
import { createFakeRelay, createPerson, type FakeRelay, type Person } from "../fakes/nostr.js";
import { startNostrBot } from "../helpers/nostr-setup.js";
import { waitUntil } from "../helpers/wait.js";
import { undiciHttp } from "../../daemon/helpers/probe.js";
import { readFile } from "node:fs/promises";

async function relay(): Promise<FakeRelay> {
  const made = await createFakeRelay();
  onTestFinished(() => made.close());
  return made;
}

async function blossom(options: { maxBytes?: number } = {}): Promise<FakeBlossom> {
  const made = await createFakeBlossom(options);
  onTestFinished(() => made.close());
  return made;
}

/** A bot on `r`; the same `life` (its folder and state) again is its next life. */
async function bot(
  r: FakeRelay,
  extra: Record<string, unknown> = {},
  maxAttachmentBytes = 1024 * 1024,
  life = { dir: mkdtempSync(join(tmpdir(), "nostr-rooms-")), state: new Map<string, unknown>() },
) {
  const { adapter, accepted, logs, key } = await startNostrBot({
    relays: [r.url],
    ...life,
    settings: extra,
    maxAttachmentBytes,
    sinkMaxAttachmentBytes: maxAttachmentBytes,
    seed: "rooms",
  });
  return { adapter, accepted, logs, key };
}

function people(botKey: string, n: number): Person[] {
  const made = Array.from({ length: n }, () => createPerson(botKey));
  onTestFinished(() => {
    for (const p of made) p.close();
  });
  return made;
}

const target = (m: InboundMessage): ChatTarget => ({ platform: m.platform, accountId: m.accountId, chatId: m.chatId, chatType: m.chatType });
const pTags = (tags: string[][]) =>
  tags
    .filter((t) => t[0] === "p")
    .map((t) => t[1])
    .sort();

describe("NIP-17 rooms", () => {
  it("are group chats of their members: addressed by the bot's npub, a name or a reply to it; answered to every member with one message", async () => {
    const r = await relay();
    const b = await bot(r, { names: ["helper"] });
    const [alice, bob, carol] = people(b.key.publicKey, 3) as [Person, Person, Person];
    const room = [alice.publicKey, bob.publicKey].sort().join(",");
    await alice.room(`nostr:${hexToNpub(b.key.publicKey)} what is on today?`, [bob.publicKey], [r.url]);
    await waitUntil(() => b.accepted.length === 1, "the addressed message");
    await bob.room("just chatting among us", [alice.publicKey], [r.url]);
    await bob.room("@helper: and you?", [alice.publicKey], [r.url]);
    await waitUntil(() => b.accepted.length === 3, "the room's messages");
    expect(b.accepted.map((m) => [m.chatId, m.chatType, m.userId, m.mentioned, m.text])).toEqual([
      [room, "group", alice.publicKey, true, "what is on today?"],
      [room, "group", bob.publicKey, false, "just chatting among us"],
      [room, "group", bob.publicKey, true, "and you?"],
    ]);

    // One reply, one message: the same rumor to alice and bob (every member's p tag), and the bot's own copy.
    const receipt = await b.adapter.send(target(b.accepted[0]!), "the plan for today", { format: "plain" });
    const toAlice = alice.rumors(r.events());
    const toBob = bob.rumors(r.events());
    expect(toAlice.map((m) => m.content)).toEqual(["the plan for today"]);
    expect(toBob.map((m) => m.id)).toEqual(toAlice.map((m) => m.id));
    expect(toAlice[0]?.id).toBe(receipt?.messageId);
    expect(pTags(toAlice[0]?.tags ?? [])).toEqual([alice.publicKey, bob.publicKey].sort());
    const own = r.to(b.key.publicKey).flatMap((e) => {
      try {
        const rumor = nip17.unwrapEvent(e, b.key.secretKey);
        return rumor.pubkey === b.key.publicKey ? [rumor.id] : [];
      } catch {
        return [];
      }
    });
    expect(own).toEqual([receipt?.messageId]);
    expect(carol.rumors(r.events())).toEqual([]);

    // A reply to the bot's message addresses it; a room with one more member is another chat; a direct message stays direct.
    await alice.room("thanks, and tomorrow?", [bob.publicKey], [r.url], [["e", receipt?.messageId ?? "", "", "reply"]]);
    await carol.room("hello all", [alice.publicKey, bob.publicKey], [r.url]);
    await alice.dm17("just to you", [r.url]);
    await waitUntil(() => b.accepted.length === 6, "the next messages");
    expect(b.accepted.slice(3).map((m) => [m.chatId, m.chatType, m.mentioned])).toEqual([
      [room, "group", true],
      [[alice.publicKey, bob.publicKey, carol.publicKey].sort().join(","), "group", false],
      [alice.publicKey, "direct", undefined],
    ]);
    // No message of the bot's own came to the core (its copies are only remembered).
    expect(b.accepted.some((m) => m.userId === b.key.publicKey)).toBe(false);
  });

  it("refuses to send to a chat id that names no room of public keys", async () => {
    const r = await relay();
    const b = await bot(r);
    const [alice] = people(b.key.publicKey, 1) as [Person];
    const bad = await b.adapter
      .send({ platform: "nostr", accountId: "ns", chatId: `${alice.publicKey},nope`, chatType: "group" }, "x", { format: "plain" })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(SendError);
    expect(bad).toMatchObject({ permanent: true });
  });
});

describe("NIP-17 files", () => {
  it("takes a kind 15 file in: downloaded, checked against x and ox, decrypted; an audio file is a voice note", async () => {
    const r = await relay();
    const server = await blossom();
    const b = await bot(r);
    const [alice] = people(b.key.publicKey, 1) as [Person];
    const voice = Buffer.from("OggS fake voice note bytes ".repeat(40));
    const sent = await alice.sendFile({ data: voice, mimeType: "audio/ogg" }, server, [r.url]);
    await waitUntil(() => b.accepted.length === 1, "the file message");
    const [message] = b.accepted;
    expect(message).toMatchObject({ chatId: alice.publicKey, chatType: "direct", messageId: sent.id, text: "" });
    expect(message?.attachments).toHaveLength(1);
    expect(message?.attachments?.[0]).toMatchObject({ kind: "audio", mimeType: "audio/ogg", fileName: expect.stringMatching(/^voice-[0-9a-f]{16}\.ogg$/) });
    expect(Buffer.from(message?.attachments?.[0]?.data ?? [])).toEqual(voice);

    const photo = Buffer.from("\x89PNG not really a picture");
    await alice.sendFile({ data: photo, mimeType: "image/png" }, server, [r.url]);
    await waitUntil(() => b.accepted.length === 2, "the photo");
    expect(b.accepted[1]?.attachments?.[0]).toMatchObject({ kind: "photo", data: photo });
  });

  it("passes on no file the server swapped, none that names another hash, and none over the bound", async () => {
    const r = await relay();
    const server = await blossom();
    const b = await bot(r, {}, 64);
    const [alice] = people(b.key.publicKey, 1) as [Person];
    await alice.sendFile({ data: Buffer.from("the real file"), mimeType: "text/plain" }, server, [r.url]);
    await alice.sendFile({ data: Buffer.from("the real file"), mimeType: "text/plain", swappedBy: Buffer.from("other bytes entirely") }, server, [r.url]);
    await alice.sendFile({ data: Buffer.from("named wrongly"), mimeType: "text/plain", hash: "ab".repeat(32) }, server, [r.url]);
    await alice.sendFile({ data: Buffer.alloc(200, 7), mimeType: "application/pdf" }, server, [r.url]);
    await waitUntil(() => b.accepted.length === 4, "the file messages");
    expect(b.accepted[0]?.attachments?.[0]?.data.toString()).toBe("the real file");
    expect(b.accepted.slice(1).map((m) => [m.attachments, m.droppedAttachments?.map((d) => d.reason)])).toEqual([
      [undefined, ["unavailable"]],
      [undefined, ["unavailable"]],
      [undefined, ["too_large"]],
    ]);
  });

  it("stopping during a file's download ends it at once, and the next life takes the message from the relay again", async () => {
    const r = await relay();
    const server = await blossom();
    const life = { dir: mkdtempSync(join(tmpdir(), "nostr-rooms-")), state: new Map<string, unknown>() };
    const first = await bot(r, {}, 1024 * 1024, life);
    const [alice] = people(first.key.publicKey, 1) as [Person];
    server.holdDownloads();
    await alice.sendFile({ data: Buffer.from("a slow file"), mimeType: "text/plain" }, server, [r.url]);
    await waitUntil(() => server.held() === 1, "the download under way");
    await first.adapter.stop();
    expect(first.accepted).toEqual([]);
    server.release();
    const second = await bot(r, {}, 1024 * 1024, life);
    await waitUntil(() => second.accepted.length === 1, "the message in the next life");
    expect(second.accepted[0]?.attachments?.[0]?.data.toString()).toBe("a slow file");
  });

  it("sends a file: encrypted, uploaded to the first Blossom server that keeps it, as a kind 15 every member opens", async () => {
    const r = await relay();
    const down = await blossom();
    const up = await blossom();
    const b = await bot(r, { blossomServers: [down.url, up.url] });
    expect(b.adapter.files).toBeDefined();
    const [alice, bob] = people(b.key.publicKey, 2) as [Person, Person];
    await alice.room(`nostr:${hexToNpub(b.key.publicKey)} send the report`, [bob.publicKey], [r.url]);
    await waitUntil(() => b.accepted.length === 1, "the request");
    down.failNext(1, 503);
    const data = Buffer.from("%PDF-1.4 the report");
    await b.adapter.files?.send(target(b.accepted[0]!), {
      path: "out/report.pdf",
      fileName: "report.pdf",
      mimeType: "application/pdf",
      kind: "document",
      data,
    });
    expect(down.uploads()).toEqual([]);
    expect(up.uploads()).toEqual([expect.objectContaining({ pubkey: b.key.publicKey, type: "application/octet-stream" })]);
    // The server holds only ciphertext.
    expect(up.uploads()[0]?.size).toBe(data.length + 16);
    for (const person of [alice, bob]) {
      const [file] = person.rumors(r.events());
      expect(file).toMatchObject({ kind: 15 });
      expect(file?.tags).toContainEqual(["file-type", "application/pdf"]);
      expect(file?.tags).toContainEqual(["name", "report.pdf"]);
      expect(await person.openFile(file!)).toEqual(data);
    }
  });

  it("has no files capability without a Blossom server, and reports a server's refusal as a SendError", async () => {
    const r = await relay();
    expect((await bot(r)).adapter.files).toBeUndefined();
    const server = await blossom({ maxBytes: 10 });
    const b = await bot(r, { blossomServers: [server.url] });
    const [alice] = people(b.key.publicKey, 1) as [Person];
    await alice.dm17("a file please", [r.url]);
    await waitUntil(() => b.accepted.length === 1, "the request");
    const error = await b.adapter.files
      ?.send(target(b.accepted[0]!), { path: "big.bin", fileName: "big.bin", mimeType: "application/octet-stream", kind: "document", data: Buffer.alloc(100) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendError);
    expect(error).toMatchObject({ permanent: true, message: expect.stringContaining("413") });
    expect(alice.rumors(r.events())).toEqual([]);
  });
});

describe("agent-bridge check for a Nostr channel with Blossom servers", () => {
  it("says how many answer, and warns of one that does not (the bot's files go there)", async () => {
    const r = await relay();
    const server = await blossom();
    const dir = mkdtempSync(join(tmpdir(), "nostr-check-"));
    const channel = nostrPlatform.finalize(nostrChannelSchema.parse({ type: "nostr", relays: [r.url], blossomServers: [server.url] }), {
      id: "ns",
      dataDir: dir,
    });
    if (!channel) throw new Error("not a nostr channel");
    await fileKey(channel.keyFile);
    const deps = { http: undiciHttp, timeoutMs: 5000, readFile: (path: string) => readFile(path, "utf8") };
    expect(await nostrPlatform.check(channel, deps)).toMatchObject({
      status: "ok",
      message: expect.stringMatching(/; 1 relay\(s\) answer; 1 Blossom server\(s\) answer$/),
    });
    await server.close();
    expect(await nostrPlatform.check(channel, deps)).toMatchObject({ status: "warn", message: expect.stringContaining(`not answering: ${server.url}`) });
  });
});
