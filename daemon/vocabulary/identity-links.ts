/**
 * Where identity links and their one-time codes are kept (core/identity-links.ts
 * decides what they mean). One machine keeps them in the store's key-values;
 * several keep them in tables of their own in PostgreSQL, seen by every node,
 * since a code made on one account's node is used on another account's.
 */

/** One person's id on one channel. */
export interface LinkIdentity {
  platform: string;
  accountId: string;
  userId: string;
}

export interface LinkBook {
  /** The person an identity is linked as, if any. */
  personOf(identity: LinkIdentity): Promise<string | undefined>;
  /** Keeps a code (its hash only) for `owner` for `ttlMs`, replacing any code the owner had out. */
  putCode(owner: LinkIdentity, hash: string, ttlMs: number): Promise<void>;
  /** Who a live code was made for, without using it up (an expired code is forgotten). */
  peekCode(hash: string): Promise<LinkIdentity | undefined>;
  /** Uses a live code up: true for the one caller that removed it (single use, also across nodes). `by`: whose command. */
  takeCode(hash: string, by: LinkIdentity): Promise<boolean>;
  /** Stores `members` as one person. `by`: whose command (on several machines the write is fenced by its account's lease). */
  link(by: LinkIdentity, members: readonly LinkIdentity[], person: string): Promise<void>;
  /** Forgets every identity stored as `person`; returns them. */
  unlink(by: LinkIdentity, person: string): Promise<LinkIdentity[]>;
}
