/**
 * The schema, as numbered migrations applied at start. Every node runs
 * `migrate` when it starts; `pg_advisory_xact_lock` serializes them, so
 * concurrent starts apply each migration once, and a node that finds a newer
 * schema than it knows refuses to run (it would write rows it cannot read).
 */
import { z } from "zod";
import type pg from "pg";
import { withClient } from "./checkout.js";
import { SchemaTooNewError } from "../../vocabulary/state-errors.js";

/** Arbitrary constant: the advisory lock key of agent-bridge's migrations. */
const MIGRATION_LOCK = 0x61_62_72_67; // "abrg"

/** Hard cap of one stored attachment (the option `maxAttachmentBytes` is at most this). */
const ATTACHMENT_CAP = 64 * 1024 * 1024;
/** The bytes of one row of a served file (file-links.ts). */
export const FILE_CHUNK = 1024 * 1024;

export const MIGRATIONS: readonly { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE lease (
        unit text PRIMARY KEY,
        holder text,
        epoch bigint NOT NULL DEFAULT 0,
        expires_at timestamptz NOT NULL DEFAULT '-infinity'
      );
      CREATE TABLE node (id text PRIMARY KEY, seen_at timestamptz NOT NULL);
      CREATE TABLE entry (
        id text PRIMARY KEY,
        unit text NOT NULL,
        seq bigserial NOT NULL,
        dedupe_key text NOT NULL UNIQUE,
        kind text NOT NULL,
        accepted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        message jsonb NOT NULL,
        route jsonb NOT NULL,
        reply jsonb,
        sent int NOT NULL DEFAULT 0,
        leader text,
        preview jsonb,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done'))
      );
      CREATE INDEX entry_pending ON entry (unit, seq) WHERE state <> 'done';
      CREATE TABLE session (
        base text PRIMARY KEY,
        unit text NOT NULL,
        state jsonb NOT NULL
      );
      CREATE INDEX session_unit ON session (unit);
      CREATE TABLE kv (unit text NOT NULL, ns text NOT NULL, k text NOT NULL, v jsonb NOT NULL, PRIMARY KEY (unit, ns, k));
      CREATE TABLE wa_auth (unit text NOT NULL, type text NOT NULL, id text NOT NULL, v jsonb NOT NULL, PRIMARY KEY (unit, type, id));
      CREATE TABLE attachment (
        entry_id text NOT NULL REFERENCES entry (id) ON DELETE CASCADE,
        idx int NOT NULL,
        bytes bytea NOT NULL CHECK (octet_length(bytes) <= ${ATTACHMENT_CAP}),
        PRIMARY KEY (entry_id, idx)
      );
    `,
  },
  {
    // Identity links and their codes belong to no one account: a code made on one account's node
    // is used on another's (state/postgres/identity-links.ts). Written fenced by the lease of the
    // account whose command writes them.
    version: 2,
    sql: `
      CREATE TABLE identity_link (
        platform text NOT NULL,
        account text NOT NULL,
        user_id text NOT NULL,
        person text NOT NULL,
        PRIMARY KEY (platform, account, user_id)
      );
      CREATE INDEX identity_link_person ON identity_link (person);
      CREATE TABLE link_code (
        hash text PRIMARY KEY,
        platform text NOT NULL,
        account text NOT NULL,
        user_id text NOT NULL,
        expires_at timestamptz NOT NULL,
        UNIQUE (platform, account, user_id)
      );
    `,
  },
  {
    // Each node's config hash (config/reload.ts), so /healthz and `check` can tell nodes that run different configs.
    version: 3,
    sql: "ALTER TABLE node ADD COLUMN config_hash text;",
  },
  {
    // Events a platform may post to any node (Slack's HTTP Events API): kept here until the
    // account's owner took them into its journal. One row per event id, so retries are one row.
    version: 4,
    sql: `
      CREATE TABLE inbox (
        unit text NOT NULL,
        key text NOT NULL,
        body jsonb NOT NULL,
        received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (unit, key)
      );
    `,
  },
  {
    // Reply files served by link (file-links.ts): any node serves any link, so the bytes live here,
    // in chunks of at most ${FILE_CHUNK} bytes a range read fetches one at a time. The HMAC key of the
    // tokens is one row every node shares; a file row is named by its token's SHA-256 only.
    version: 5,
    sql: `
      CREATE TABLE file_link_key (id int PRIMARY KEY CHECK (id = 1), key bytea NOT NULL CHECK (octet_length(key) = 32));
      CREATE TABLE file_link (
        id text PRIMARY KEY,
        unit text NOT NULL,
        file_name text NOT NULL,
        mime_type text NOT NULL,
        size bigint NOT NULL CHECK (size >= 0),
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX file_link_unit_expiry ON file_link (unit, expires_at);
      CREATE TABLE file_link_chunk (
        id text NOT NULL REFERENCES file_link (id) ON DELETE CASCADE,
        n int NOT NULL,
        bytes bytea NOT NULL CHECK (octet_length(bytes) <= ${FILE_CHUNK}),
        PRIMARY KEY (id, n)
      );
    `,
  },
];

export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

const VersionRow = z.object({ version: z.number().int().nullable() });

/** Applies the missing migrations, once across all nodes; returns the schema version now in place. */
export async function migrate(pool: pg.Pool): Promise<{ version: number; applied: number[] }> {
  return withClient(pool, async (client, markBroken) => {
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await client.query("CREATE TABLE IF NOT EXISTS schema_version (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      const current = VersionRow.parse((await client.query("SELECT max(version) AS version FROM schema_version")).rows[0]).version ?? 0;
      if (current > SCHEMA_VERSION) throw new SchemaTooNewError(current, SCHEMA_VERSION);
      const applied: number[] = [];
      for (const m of MIGRATIONS) {
        if (m.version <= current) continue;
        await client.query(m.sql);
        await client.query("INSERT INTO schema_version (version) VALUES ($1)", [m.version]);
        applied.push(m.version);
      }
      await client.query("COMMIT");
      return { version: Math.max(current, ...applied), applied };
    } catch (error) {
      await client.query("ROLLBACK").catch(markBroken);
      throw error;
    }
  });
}
