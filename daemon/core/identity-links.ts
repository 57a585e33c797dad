/**
 * One person across apps: a person links their direct chats on two platforms
 * (`/link` gives a one-time code on one, `/link CODE` on the other), or an
 * owner links them in the config (`identityLinks`), and their direct messages
 * then share one conversation. Group chats are never merged.
 *
 * Stored like pairing approvals, in the store's key-values:
 *   `code\0<hash>`                     a code waiting to be used (its SHA-256 only), who asked, until when
 *   `pending\0<platform>\0<account>\0<user>`  the one code a person has out (a new one replaces it)
 *   `id\0<platform>\0<account>\0<user>`       the person an identity belongs to
 * Codes are single use, expire after ten minutes, and each identity has at
 * most one out. A code is bound to no channel: it is made to be used on
 * another one.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../../shared/clock.js";
import { hex, type Random } from "../../shared/random.js";
import type { Store } from "../vocabulary/store.js";
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
type Identity = Pick<InboundMessage, "platform" | "accountId" | "userId">;

/** What is stored of a code: its SHA-256 (the journal keeps `/link sha256:<hash>`, never the code). */
export const hashLinkCode = (code: string): string =>
  createHash("sha256")
    .update(`agent-bridge link v1\u0000${normalizeCode(code)}`)
    .digest("hex");

const idKey = (i: Identity) => ["id", i.platform, i.accountId, i.userId].join("\u0000");
const pendingKey = (i: Identity) => ["pending", i.platform, i.accountId, i.userId].join("\u0000");
const codeKey = (hash: string) => `code\u0000${hash}`;

export interface IdentityLinksDeps {
  store: Store;
  clock: Clock;
  random: Random;
  /** Owners' links from the config: each a list of identities (channel id and user id) that are one person. */
  configured: readonly (readonly { channel: string; userId: string }[])[];
  /** The platform of a channel id, for configured links. */
  platformOf(accountId: string): string | undefined;
  /** False on several machines: a code made on one account's node cannot be seen on another's yet. */
  available: boolean;
}

export class IdentityLinks {
  readonly #deps: IdentityLinksDeps;
  /** The store's key-values of links and codes. */
  readonly #kv: ReturnType<Store["kv"]>;
  /** Configured links: identity key to person, fixed for the daemon's life. */
  readonly #configured = new Map<string, string>();

  constructor(deps: IdentityLinksDeps) {
    this.#deps = deps;
    this.#kv = deps.store.kv(LINKS_NS);
    deps.configured.forEach((group, i) => {
      for (const member of group) {
        const platform = deps.platformOf(member.channel);
        if (platform) this.#configured.set(idKey({ platform, accountId: member.channel, userId: member.userId }), `config-${i}`);
      }
    });
  }

  /** The person a direct chat's sender is linked as, if any (the configured link first). */
  personOf(identity: Identity): string | undefined {
    const configured = this.#configured.get(idKey(identity));
    if (configured) return configured;
    if (!this.#deps.available) return undefined;
    const stored = IdSchema.safeParse(this.#kv.get(idKey(identity)));
    return stored.success ? stored.data.person : undefined;
  }

  /** The session base of a linked person's direct messages (the same on every linked platform); undefined: the chat's own. */
  sessionBaseFor(message: Pick<InboundMessage, "platform" | "accountId" | "userId" | "chatType">): string | undefined {
    if (message.chatType !== "direct") return undefined;
    const person = this.personOf(message);
    return person ? `person.${encodeId(person)}` : undefined;
  }

  /** `/link`: a fresh code for this identity (replacing any it had out). */
  async newCode(identity: Identity): Promise<string> {
    const kv = this.#kv;
    const previous = z.string().safeParse(kv.get(pendingKey(identity)));
    if (previous.success) await kv.set(codeKey(previous.data), undefined);
    const bytes = this.#deps.random.bytes(CODE_LENGTH);
    const code = [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join("");
    const hash = hashLinkCode(code);
    await kv.set(codeKey(hash), { ...identity, expiresAt: this.#deps.clock.now() + CODE_TTL_MS });
    await kv.set(pendingKey(identity), hash);
    return `${code.slice(0, 4)}-${code.slice(4)}`;
  }

  /** `/link CODE` (the code as hashed): links this identity with the one that asked for the code. */
  async redeem(identity: Identity, codeHash: string): Promise<{ ok: true; other: Identity } | { ok: false; reason: "no_match" | "same" | "linked_elsewhere" }> {
    const kv = this.#kv;
    const found = CodeSchema.safeParse(kv.get(codeKey(codeHash)));
    if (!found.success) return { ok: false, reason: "no_match" };
    const other = found.data;
    if (other.expiresAt <= this.#deps.clock.now()) {
      await this.#forgetCode(codeHash, other);
      return { ok: false, reason: "no_match" };
    }
    if (other.platform === identity.platform && other.accountId === identity.accountId) return { ok: false, reason: "same" };
    if (this.#configured.has(idKey(identity)) || this.#configured.has(idKey(other))) return { ok: false, reason: "linked_elsewhere" };
    // Single use: gone before the link is written, so a crash between cannot use it twice.
    await this.#forgetCode(codeHash, other);
    const person = this.personOf(other) ?? this.personOf(identity) ?? `p${hex(this.#deps.random, 8)}`;
    await kv.set(idKey(other), { person });
    await kv.set(idKey(identity), { person });
    return { ok: true, other: { platform: other.platform, accountId: other.accountId, userId: other.userId } };
  }

  /** `/unlink`: every identity stored as this person goes back to its own chats. Returns the others that were linked. */
  async unlink(identity: Identity): Promise<Identity[] | "configured" | "none"> {
    if (this.#configured.has(idKey(identity))) return "configured";
    const person = this.personOf(identity);
    if (!person) return "none";
    const members = this.#kv
      .keys()
      .filter((k) => k.startsWith("id\u0000") && IdSchema.safeParse(this.#kv.get(k)).data?.person === person)
      .map((k) => {
        const [, platform = "", accountId = "", userId = ""] = k.split("\u0000");
        return { platform, accountId, userId };
      });
    for (const m of members) await this.#kv.set(idKey(m), undefined);
    return members.filter((m) => idKey(m) !== idKey(identity));
  }

  async #forgetCode(hash: string, owner: Identity): Promise<void> {
    await this.#kv.set(codeKey(hash), undefined);
    if (this.#kv.get(pendingKey(owner)) === hash) await this.#kv.set(pendingKey(owner), undefined);
  }
}
