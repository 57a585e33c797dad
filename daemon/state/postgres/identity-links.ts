/**
 * Identity links on several machines: tables of their own (migration 2), not
 * under one account, since a code made on the Telegram account's node is used
 * on the Discord account's. Every node reads them from the database when it
 * needs them (no cache: a link made on one node counts on the next message on
 * any other). Each write is one transaction fenced by the lease of the account
 * whose command makes it, so a node that lost that account writes nothing.
 *
 * Codes: only their hash is stored; single use is a `DELETE ... RETURNING` (of
 * two nodes taking one code at once, one gets the row); they expire on the
 * database's clock (nodes' clocks need not agree); one per identity (a
 * `UNIQUE` constraint; a new one replaces it) and expired ones are deleted
 * whenever a code is made, so the table is bounded by the people who asked.
 */
import type pg from "pg";
import { z } from "zod";
import type { LinkBook, LinkIdentity } from "../../vocabulary/identity-links.js";
import { accountKeyOf } from "../../vocabulary/keys.js";

/** Runs `work` in a transaction fenced by `unit`'s lease (unit-state.ts `fenced`). */
export type FencedBy = <T>(unit: string, operation: string, work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

const IdentityRow = z.object({ platform: z.string(), account: z.string(), user_id: z.string() });
const PersonRow = z.object({ person: z.string() });

const unitOf = (i: LinkIdentity) => accountKeyOf(i.platform, i.accountId);
const identityOf = (row: unknown): LinkIdentity => {
  const r = IdentityRow.parse(row);
  return { platform: r.platform, accountId: r.account, userId: r.user_id };
};

export function createPgLinkBook(deps: { pool: pg.Pool; fencedBy: FencedBy }): LinkBook {
  const { pool, fencedBy } = deps;
  return {
    async personOf(i) {
      const { rows } = await pool.query("SELECT person FROM identity_link WHERE platform = $1 AND account = $2 AND user_id = $3", [
        i.platform,
        i.accountId,
        i.userId,
      ]);
      return rows[0] === undefined ? undefined : PersonRow.parse(rows[0]).person;
    },
    putCode(owner, hash, ttlMs) {
      return fencedBy(unitOf(owner), "link code", async (client) => {
        await client.query("DELETE FROM link_code WHERE (platform = $1 AND account = $2 AND user_id = $3) OR expires_at <= clock_timestamp()", [
          owner.platform,
          owner.accountId,
          owner.userId,
        ]);
        await client.query(
          "INSERT INTO link_code (hash, platform, account, user_id, expires_at) VALUES ($1, $2, $3, $4, clock_timestamp() + $5 * interval '1 millisecond')",
          [hash, owner.platform, owner.accountId, owner.userId, ttlMs],
        );
      });
    },
    async peekCode(hash) {
      const { rows } = await pool.query("SELECT platform, account, user_id FROM link_code WHERE hash = $1 AND expires_at > clock_timestamp()", [hash]);
      return rows[0] === undefined ? undefined : identityOf(rows[0]);
    },
    takeCode(hash, by) {
      return fencedBy(unitOf(by), "use link code", async (client) => {
        const { rowCount } = await client.query("DELETE FROM link_code WHERE hash = $1 AND expires_at > clock_timestamp()", [hash]);
        return rowCount === 1;
      });
    },
    link(by, members, person) {
      return fencedBy(unitOf(by), "link", async (client) => {
        for (const m of members)
          await client.query(
            "INSERT INTO identity_link (platform, account, user_id, person) VALUES ($1, $2, $3, $4) ON CONFLICT (platform, account, user_id) DO UPDATE SET person = excluded.person",
            [m.platform, m.accountId, m.userId, person],
          );
      });
    },
    unlink(by, person) {
      return fencedBy(unitOf(by), "unlink", async (client) => {
        const { rows } = await client.query("DELETE FROM identity_link WHERE person = $1 RETURNING platform, account, user_id", [person]);
        return rows.map(identityOf);
      });
    },
  };
}
