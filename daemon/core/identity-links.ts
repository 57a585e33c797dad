/**
 * One person across apps: a person links their direct chats on two platforms
 * (`/link` gives a one-time code on one, `/link CODE` on the other), or an
 * owner links them in the config (`identityLinks`), and their direct messages
 * then share one conversation. Group chats are never merged.
 *
 * Kept by a `LinkBook` (vocabulary/identity-links.ts): on one machine in the
 * store's key-values, like pairing approvals:
 *   `code\0<hash>`                     a code waiting to be used (its SHA-256 only), who asked, until when
 *   `pending\0<platform>\0<account>\0<user>`  the one code a person has out (a new one replaces it)
 *   `id\0<platform>\0<account>\0<user>`       the person an identity belongs to
 * Codes are single use, expire after ten minutes, and each identity has at
 * most one out. A code is bound to no channel: it is made to be used on
 * another one. On several machines the store brings its own book (tables in
 * PostgreSQL every node sees: state/postgres/identity-links.ts).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../../shared/clock.js";
import { hex, type Random } from "../../shared/random.js";
import type { Store } from "../vocabulary/store.js";
import type { LinkBook, LinkIdentity } from "../vocabulary/identity-links.js";
import type { InboundMessage } from "../vocabulary/adapter.js";
import { encodeId } from "../vocabulary/keys.js";
import { normalizeCode } from "./pairing.js";

export const LINKS_NS = "links";
const CODE_TTL_MS = 10 * 60 * 1000;
const CODE_LENGTH = 8;
const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

const CodeSchema = z.object({ platform: z.string(), accountId: z.string(), userId: z.string(), expiresAt: z.number() });
const IdSchema = z.object({ person: z.string() });

/** An identity: one person's id on one channel. */
type Identity = LinkIdentity;

/** What is stored of a code: its SHA-256 (the journal keeps `/link sha256:<hash>`, never the code). */
export const hashLinkCode = (code: string): string =>
  createHash("sha256")
    .update(`agent-bridge link v1\u0000${normalizeCode(code)}`)
    .digest("hex");

const idKey = (i: Identity) => ["id", i.platform, i.accountId, i.userId].join("\u0000");
const pendingKey = (i: Identity) => ["pending", i.platform, i.accountId, i.userId].join("\u0000");
const codeKey = (hash: string) => `code\u0000${hash}`;

/**
 * A configured group's person: `config-` and a digest of the first member it lists, so it stays
 * the person's while the list around it changes and while members are added after it (a group
 * whose first member leaves or moves starts a fresh conversation: nobody else's).
 */
const configuredPerson = (firstMemberKey: string): string => `config-${createHash("sha256").update(firstMemberKey).digest("hex").slice(0, 24)}`;

/** A linked person's session base: `person.<id>`, under no account (several machines: state/cluster-store.ts). */
export const PERSON_BASE_PREFIX = "person.";

/** The one-machine book: the store's key-values (`links` namespace), written in order by the one daemon. */
export class KvLinkBook implements LinkBook {
  /** The store's key-values of links and codes. */
  readonly #kv: ReturnType<Store["kv"]>;
  /** What expiry is measured on. */
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#kv = store.kv(LINKS_NS);
    this.#clock = clock;
  }

  async personOf(identity: Identity): Promise<string | undefined> {
    const stored = IdSchema.safeParse(this.#kv.get(idKey(identity)));
    return stored.success ? stored.data.person : undefined;
  }

  async putCode(owner: Identity, hash: string, ttlMs: number): Promise<void> {
    const previous = z.string().safeParse(this.#kv.get(pendingKey(owner)));
    if (previous.success) await this.#kv.set(codeKey(previous.data), undefined);
    await this.#kv.set(codeKey(hash), { ...owner, expiresAt: this.#clock.now() + ttlMs });
    await this.#kv.set(pendingKey(owner), hash);
  }

  async peekCode(hash: string): Promise<Identity | undefined> {
    const found = CodeSchema.safeParse(this.#kv.get(codeKey(hash)));
    if (!found.success) return undefined;
    const { platform, accountId, userId, expiresAt } = found.data;
    if (expiresAt > this.#clock.now()) return { platform, accountId, userId };
    await this.#forgetCode(hash, found.data);
    return undefined;
  }

  async takeCode(hash: string): Promise<boolean> {
    const owner = await this.peekCode(hash);
    if (!owner) return false;
    await this.#forgetCode(hash, owner);
    return true;
  }

  async link(_by: Identity, members: readonly Identity[], person: string): Promise<void> {
    for (const m of members) await this.#kv.set(idKey(m), { person });
  }

  async unlink(_by: Identity, person: string): Promise<Identity[]> {
    const members = this.#kv
      .keys()
      .filter((k) => k.startsWith("id\u0000") && IdSchema.safeParse(this.#kv.get(k)).data?.person === person)
      .map((k) => {
        const [, platform = "", accountId = "", userId = ""] = k.split("\u0000");
        return { platform, accountId, userId };
      });
    for (const m of members) await this.#kv.set(idKey(m), undefined);
    return members;
  }

  async #forgetCode(hash: string, owner: Identity): Promise<void> {
    await this.#kv.set(codeKey(hash), undefined);
    if (this.#kv.get(pendingKey(owner)) === hash) await this.#kv.set(pendingKey(owner), undefined);
  }
}

/** Owners' links as the config lists them: each a list of identities (channel id and user id) that are one person. */
type ConfiguredLinks = readonly (readonly { channel: string; userId: string }[])[];

export interface IdentityLinksDeps {
  store: Store;
  clock: Clock;
  random: Random;
  /** Owners' links from the config, read at each message (a reload replaces them). */
  configured(): ConfiguredLinks;
  /** The platform of a channel id, for configured links. */
  platformOf(accountId: string): string | undefined;
}

export class IdentityLinks {
  readonly #deps: IdentityLinksDeps;
  /** Where links and codes are kept: the store's own book (several machines) or its key-values. */
  readonly #book: LinkBook;
  /** Configured links, identity key to person, as made from the list they came from (made again when a reload replaces it). */
  #configuredFrom: { links: ConfiguredLinks; byIdentity: Map<string, string> } | undefined;

  constructor(deps: IdentityLinksDeps) {
    this.#deps = deps;
    this.#book = deps.store.linkBook ?? new KvLinkBook(deps.store, deps.clock);
  }

  /** The configured links now: identity key to person. */
  get #configured(): ReadonlyMap<string, string> {
    const links = this.#deps.configured();
    if (this.#configuredFrom?.links !== links) {
      const byIdentity = new Map<string, string>();
      for (const group of links) {
        const keys = group.flatMap((member) => {
          const platform = this.#deps.platformOf(member.channel);
          return platform ? [idKey({ platform, accountId: member.channel, userId: member.userId })] : [];
        });
        // Named after its own first member, never its place in the list: a group removed or moved
        // by a reload must not hand its conversation to the group that takes its place.
        const first = keys[0];
        if (first === undefined) continue;
        const person = configuredPerson(first);
        for (const key of keys) byIdentity.set(key, person);
      }
      this.#configuredFrom = { links, byIdentity };
    }
    return this.#configuredFrom.byIdentity;
  }

  /** The person a direct chat's sender is linked as, if any (the configured link first). */
  async personOf(identity: Identity): Promise<string | undefined> {
    return this.#configured.get(idKey(identity)) ?? (await this.#book.personOf(identity));
  }

  /** The session base of a linked person's direct messages (the same on every linked platform); undefined: the chat's own. */
  async sessionBaseFor(message: Pick<InboundMessage, "platform" | "accountId" | "userId" | "chatType">): Promise<string | undefined> {
    if (message.chatType !== "direct") return undefined;
    const person = await this.personOf(message);
    return person ? `${PERSON_BASE_PREFIX}${encodeId(person)}` : undefined;
  }

  /** `/link`: a fresh code for this identity (replacing any it had out). */
  async newCode(identity: Identity): Promise<string> {
    const bytes = this.#deps.random.bytes(CODE_LENGTH);
    const code = [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join("");
    await this.#book.putCode(identity, hashLinkCode(code), CODE_TTL_MS);
    return `${code.slice(0, 4)}-${code.slice(4)}`;
  }

  /** `/link CODE` (the code as hashed): links this identity with the one that asked for the code. */
  async redeem(identity: Identity, codeHash: string): Promise<{ ok: true; other: Identity } | { ok: false; reason: "no_match" | "same" | "linked_elsewhere" }> {
    const other = await this.#book.peekCode(codeHash);
    if (!other) return { ok: false, reason: "no_match" };
    if (other.platform === identity.platform && other.accountId === identity.accountId) return { ok: false, reason: "same" };
    if (this.#configured.has(idKey(identity)) || this.#configured.has(idKey(other))) return { ok: false, reason: "linked_elsewhere" };
    // Single use: gone before the link is written, so a crash between cannot use it twice; of two takers at once, one wins.
    if (!(await this.#book.takeCode(codeHash, identity))) return { ok: false, reason: "no_match" };
    const person = (await this.#book.personOf(other)) ?? (await this.#book.personOf(identity)) ?? `p${hex(this.#deps.random, 8)}`;
    await this.#book.link(identity, [other, identity], person);
    return { ok: true, other: { platform: other.platform, accountId: other.accountId, userId: other.userId } };
  }

  /** `/unlink`: every identity stored as this person goes back to its own chats. Returns the others that were linked. */
  async unlink(identity: Identity): Promise<Identity[] | "configured" | "none"> {
    if (this.#configured.has(idKey(identity))) return "configured";
    const person = await this.#book.personOf(identity);
    if (!person) return "none";
    const members = await this.#book.unlink(identity, person);
    return members.filter((m) => idKey(m) !== idKey(identity));
  }
}
