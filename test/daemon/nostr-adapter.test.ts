/**
 * What is particular to Nostr, against fake relays that follow NIP-01, NIP-42,
 * NIP-17 and NIP-44, with a nostr-tools client as the person: the scheme a
 * person used is the one answered in, one event from several relays (and again
 * after a reconnect) reaches the core once, relays' rate limits and
 * authentication, forged events, and the generated key kept as a secret.
 */
import { mkdtempSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as nip59 from "nostr-tools/nip59";
import { finalizeEvent, generateSecretKey, getPublicKey } from "nostr-tools/pure";
import { describe, expect, it, onTestFinished } from "vitest";
import { nostrChannelSchema } from "../../daemon/adapters/nostr/config.js";
import { RATE_LIMIT_WAIT_MS } from "../../daemon/adapters/nostr/index.js";
import { fileKey, recordKey } from "../../daemon/adapters/nostr/keys.js";
import { nostrPlatform } from "../../daemon/adapters/nostr/platform.js";
import { type ChatTarget, type CredentialStore, type InboundMessage, SendError } from "../../daemon/vocabulary/adapter.js";
import { undiciHttp } from "../../daemon/helpers/probe.js";
import { createFakeRelay, createPerson, type FakeRelay } from "../fakes/nostr.js";
import { startNostrBot } from "../helpers/nostr-setup.js";
import { waitUntil } from "../helpers/wait.js";

async function relays(...options: { auth?: boolean }[]): Promise<FakeRelay[]> {
  const made = await Promise.all(options.map((o) => createFakeRelay(o)));
  onTestFinished(() => Promise.all(made.map((r) => r.close())).then(() => undefined));
  return made;
}

/** A bot on `urls` with durable state in `state` and its key in `dir`: a second call with the same is the next life. */
const bot = (urls: string[], dir: string, state: Map<string, unknown>) => startNostrBot({ relays: urls, dir, state, maxAttachmentBytes: 1024, seed: "nostr" });

const target = (m: InboundMessage): ChatTarget => ({ platform: m.platform, accountId: m.accountId, chatId: m.chatId, chatType: m.chatType });
const freshDir = () => mkdtempSync(join(tmpdir(), "nostr-test-"));

describe("the Nostr adapter", () => {
  it("answers a NIP-17 sender with a gift wrap and a NIP-04 sender with a kind 4, each in the scheme they used", async () => {
    const [relay] = await relays({});
    const b = await bot([relay!.url], freshDir(), new Map());
    const modern = createPerson(b.key.publicKey);
    const legacy = createPerson(b.key.publicKey);
    onTestFinished(() => modern.close());
    onTestFinished(() => legacy.close());
    await modern.dm17("hello over NIP-17", [relay!.url]);
    await legacy.dm04("hello over NIP-04", [relay!.url]);
    await waitUntil(() => b.accepted.length === 2, "both messages");
    for (const m of b.accepted) await b.adapter.send(target(m), `answer to ${m.text}`, { format: "plain" });
    await waitUntil(() => modern.read(relay!.events()).length === 1 && legacy.read(relay!.events()).length === 1, "both answers");
    expect(modern.read(relay!.events())).toEqual([{ text: "answer to hello over NIP-17", protocol: "nip17" }]);
    expect(legacy.read(relay!.events())).toEqual([{ text: "answer to hello over NIP-04", protocol: "nip04" }]);
    expect(b.accepted.map((m) => m.chatType)).toEqual(["direct", "direct"]);
  });

  it("counts one event from several relays once, and again once after a reconnect that looks back two days", async () => {
    const [a, c] = await relays({}, { auth: true });
    const urls = [a!.url, c!.url];
    const b = await bot(urls, freshDir(), new Map());
    const person = createPerson(b.key.publicKey);
    onTestFinished(() => person.close());
    const sent = await person.dm17("one message, two relays", urls);
    await waitUntil(() => b.accepted.length === 1, "the message");
    // The relays drop; the bot resubscribes and the relays send what they hold again.
    const before = a!.requests().length;
    a!.drop();
    c!.drop();
    await waitUntil(() => a!.requests().length > before && c!.connections() > 0, "a resubscription");
    await person.dm17("after the reconnect", urls);
    await waitUntil(() => b.accepted.length === 2, "the next message");
    expect(b.accepted.map((m) => [m.messageId, m.text])).toEqual([
      [sent.id, "one message, two relays"],
      [expect.any(String), "after the reconnect"],
    ]);
    // NIP-17 wraps are dated up to two days back: the resubscription asks for that much.
    const since = a!.requests().at(-1)?.[0]?.since ?? Number.POSITIVE_INFINITY;
    expect(since).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) - 2 * 24 * 3600);
  });

  it('subscribes again after a relay ends the subscription (CLOSED "rate-limited:"), and misses nothing sent meanwhile', async () => {
    const [relay] = await relays({});
    const b = await bot([relay!.url], freshDir(), new Map());
    const person = createPerson(b.key.publicKey);
    onTestFinished(() => person.close());
    const before = relay!.requests().length;
    relay!.closeSubscriptions("rate-limited: too many subscriptions");
    await person.dm17("sent while closed", [relay!.url]);
    await waitUntil(() => b.accepted.length === 1, "the message, after the new subscription");
    expect(relay!.requests().length).toBeGreaterThan(before);
    expect(b.accepted.map((m) => m.text)).toEqual(["sent while closed"]);
  });

  it("keeps the key in the account's credential records on several machines: generated once, the same for the next owner", async () => {
    const records = new Map<string, unknown>();
    const store: CredentialStore = {
      read: async (type, ids) =>
        Object.fromEntries(ids.flatMap((id) => (records.has(`${type}/${id}`) ? [[id, structuredClone(records.get(`${type}/${id}`))]] : []))),
      write: async (data) => {
        for (const [type, values] of Object.entries(data))
          for (const [id, v] of Object.entries(values)) v === null ? records.delete(`${type}/${id}`) : records.set(`${type}/${id}`, v);
      },
      clear: async () => records.clear(),
    };
    const first = await recordKey(store);
    const next = await recordKey(store);
    expect(next.publicKey).toBe(first.publicKey);
    expect(records.size).toBe(1);
    records.set([...records.keys()][0]!, { secretKey: "00".repeat(32), publicKey: first.publicKey });
    const refused = await recordKey(store).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(String(refused)).not.toContain(first.secretHex);
  });

  it("reads and publishes through a relay that demands NIP-42 authentication", async () => {
    const [relay] = await relays({ auth: true });
    const b = await bot([relay!.url], freshDir(), new Map());
    const person = createPerson(b.key.publicKey);
    onTestFinished(() => person.close());
    await person.dm17("behind auth", [relay!.url]);
    await waitUntil(() => b.accepted.length === 1, "the message");
    await b.adapter.send(target(b.accepted[0]!), "answer behind auth", { format: "plain" });
    expect(person.read(relay!.events()).map((m) => m.text)).toEqual(["answer behind auth"]);
  });

  it("reports relays' rate limits as a transient SendError with a wait, and a refusal by every relay as permanent", async () => {
    const [a, c] = await relays({}, {});
    const b = await bot([a!.url, c!.url], freshDir(), new Map());
    const person = createPerson(b.key.publicKey);
    onTestFinished(() => person.close());
    await person.dm17("hi", [a!.url]);
    await waitUntil(() => b.accepted.length === 1, "the message");
    a!.rateLimit(1);
    c!.rateLimit(1);
    const error = await b.adapter.send(target(b.accepted[0]!), "too fast", { format: "plain" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendError);
    expect(error).toMatchObject({ permanent: false, retryAfterMs: RATE_LIMIT_WAIT_MS });
    // One relay limiting is no failure: the other takes it.
    a!.rateLimit(1);
    await expect(b.adapter.send(target(b.accepted[0]!), "one relay takes it", { format: "plain" })).resolves.toMatchObject({ messageId: expect.any(String) });
    const bad = await b.adapter.send({ ...target(b.accepted[0]!), chatId: "not-a-key" }, "x", { format: "plain" }).catch((e: unknown) => e);
    expect(bad).toMatchObject({ permanent: true });
  });

  it("drops forged events: a bad signature, and a gift wrap whose seal is signed by someone other than its author", async () => {
    const [relay] = await relays({});
    const b = await bot([relay!.url], freshDir(), new Map());
    const person = createPerson(b.key.publicKey);
    onTestFinished(() => person.close());
    const forged = finalizeEvent(
      { kind: 4, created_at: Math.floor(Date.now() / 1000), tags: [["p", b.key.publicKey]], content: "x?iv=y" },
      generateSecretKey(),
    );
    relay!.inject({ ...forged, content: "tampered?iv=y" });
    // A rumor claiming Alice's key, sealed by Mallory.
    const alice = getPublicKey(generateSecretKey());
    const mallory = generateSecretKey();
    const rumor = { ...nip59.createRumor({ kind: 14, content: "I am Alice", tags: [["p", b.key.publicKey]] }, mallory), pubkey: alice };
    relay!.inject(nip59.createWrap(nip59.createSeal(rumor, mallory, b.key.publicKey), b.key.publicKey));
    await person.dm17("the real one", [relay!.url]);
    await waitUntil(() => b.accepted.length === 1, "the real message");
    expect(b.accepted.map((m) => m.text)).toEqual(["the real one"]);
  });

  it("generates its key once, keeps it owner-only, reuses it in the next life, and never logs it", async () => {
    const [relay] = await relays({});
    const dir = freshDir();
    const state = new Map<string, unknown>();
    const first = await bot([relay!.url], dir, state);
    expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
    const person = createPerson(first.key.publicKey);
    onTestFinished(() => person.close());
    await person.dm17("first life", [relay!.url]);
    await waitUntil(() => first.accepted.length === 1, "the message");
    await first.adapter.stop();
    const second = await bot([relay!.url], dir, state);
    expect(second.key.publicKey).toBe(first.key.publicKey);
    await person.dm17("second life", [relay!.url]);
    await waitUntil(() => second.accepted.length === 1, "the next message");
    // The first life's message came again from the relay and was known: only the new one reached the core.
    expect(second.accepted.map((m) => m.text)).toEqual(["second life"]);
    for (const b of [first, second]) expect(b.logs.text()).not.toContain(b.key.secretHex);
  });
});

describe("agent-bridge check for a Nostr channel", () => {
  it("shows the bot's npub once the key exists, and whether the relays answer", async () => {
    const [relay] = await relays({});
    const dir = freshDir();
    const channel = nostrPlatform.finalize(nostrChannelSchema.parse({ type: "nostr", relays: [relay!.url] }), { id: "ns", dataDir: dir });
    if (!channel) throw new Error("not a nostr channel");
    const deps = { http: undiciHttp, timeoutMs: 5000, readFile: (path: string) => readFile(path, "utf8") };
    const before = await nostrPlatform.check(channel, deps);
    expect(before).toMatchObject({ status: "warn", message: expect.stringContaining("generates one on first start") });
    const key = await fileKey(channel.keyFile);
    const after = await nostrPlatform.check(channel, deps);
    expect(after).toMatchObject({ status: "ok", message: expect.stringMatching(/^bot npub1[02-9ac-hj-np-z]{58}; 1 relay\(s\) answer$/) });
    expect(JSON.stringify(after)).not.toContain(key.secretHex);
    await relay!.close();
    const down = await nostrPlatform.check(channel, deps);
    expect(down).toMatchObject({ status: "fail", message: expect.stringContaining("no relay answers") });
  });

  it("reads an npub in the access lists as the hex key a message brings", () => {
    const hex = "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d";
    expect(nostrPlatform.users.normalize("npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6")).toBe(hex);
    expect(nostrPlatform.users.normalize(hex.toUpperCase())).toBe(hex);
    expect(nostrPlatform.users.normalize("npub1broken")).toBe("npub1broken");
  });
});
