/**
 * `agent-bridge check` for the PostgreSQL state (`"state": {"kind":
 * "postgres"}`): the database answers, its schema is one this daemon can run
 * on, and which node owns each account (read-only: it migrates nothing and
 * takes no lease). The file journal needs no check here.
 */
import { z } from "zod";
import type { DaemonConfig } from "../config/schema.js";
import { describeUrl, type PostgresStateOptions } from "../state/postgres/options.js";
import type { CheckResult } from "../vocabulary/check-result.js";
import { accountKeyOf } from "../vocabulary/keys.js";
import { configHash } from "../config/reload.js";
import { isModuleNotFound } from "../../shared/util/module-not-found.js";

const VersionRow = z.object({ version: z.number().int().nullable() });
const LeaseRow = z.object({
  unit: z.string(),
  holder: z.string().nullable(),
  epoch: z.coerce.number().int(),
  expires_in_ms: z.coerce.number().nullable(),
});

export async function checkState(config: DaemonConfig, deps: { timeoutMs: number }): Promise<CheckResult[]> {
  if (config.state.kind !== "postgres") return [];
  return checkPostgres(config, config.state, deps.timeoutMs);
}

async function checkPostgres(config: DaemonConfig, state: PostgresStateOptions, timeoutMs: number): Promise<CheckResult[]> {
  const subject = `database ${describeUrl(state.url)}`;
  let pg: typeof import("pg").default;
  try {
    pg = (await import("pg")).default;
  } catch (error) {
    // Only a missing package is reported as one: any other failure to load it says what it was.
    if (!isModuleNotFound(error, "pg")) throw error;
    return [{ status: "fail", subject, message: "the pg package is not installed", fix: "npm install pg beside agent-bridge" }];
  }
  const { SCHEMA_VERSION } = await import("../state/postgres/migrations.js");
  const client = new pg.Client({ connectionString: state.url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (error) {
    return [
      {
        status: "fail",
        subject,
        message: `cannot connect (${error instanceof Error ? error.message.replaceAll(state.url, describeUrl(state.url)) : "connection failed"})`,
        fix: "start PostgreSQL, or correct state.url (host, port, database, user)",
      },
    ];
  }
  try {
    const exists = await client.query("SELECT to_regclass('schema_version') IS NOT NULL AS present");
    if (!(exists.rows[0] as { present: boolean }).present)
      return [{ status: "warn", subject, message: `reachable, no bridge schema yet (the first daemon to start creates version ${SCHEMA_VERSION})` }];
    const version = VersionRow.parse((await client.query("SELECT max(version) AS version FROM schema_version")).rows[0]).version ?? 0;
    if (version > SCHEMA_VERSION)
      return [
        {
          status: "fail",
          subject,
          message: `schema version ${version} is newer than this daemon's ${SCHEMA_VERSION}`,
          fix: "run the newer agent-bridge on every node",
        },
      ];
    const results: CheckResult[] = [
      {
        status: "ok",
        subject,
        message: `reachable, schema version ${version}${version < SCHEMA_VERSION ? ` (the next daemon start migrates it to ${SCHEMA_VERSION})` : ""}`,
      },
    ];
    const { rows } = await client.query(
      "SELECT unit, holder, epoch, CASE WHEN isfinite(expires_at) THEN extract(epoch FROM expires_at - clock_timestamp()) * 1000 END AS expires_in_ms FROM lease",
    );
    const leases = new Map(rows.map((r) => LeaseRow.parse(r)).map((l) => [l.unit, l]));
    for (const channel of config.channels.filter((c) => c.enabled)) {
      const unit = accountKeyOf(channel.type, channel.id);
      const lease = leases.get(unit);
      const live = lease?.holder && (lease.expires_in_ms ?? -1) > 0;
      results.push(
        live
          ? {
              status: "ok",
              subject: `account ${unit}`,
              message: `owned by node ${lease.holder} (epoch ${lease.epoch}, lease valid for ${Math.round(lease.expires_in_ms! / 1000)} s more)`,
            }
          : {
              status: "warn",
              subject: `account ${unit}`,
              message: lease ? `owned by no node now (last epoch ${lease.epoch})` : "never owned yet",
              fix: "start a daemon with this config; a running one takes it within a lease time",
            },
      );
    }
    if (version >= 3) results.push(await checkNodeConfigs(client, config, state));
    return results;
  } catch (error) {
    return [{ status: "fail", subject, message: `query failed (${error instanceof Error ? error.message : "unknown error"})` }];
  } finally {
    await client.end().catch(() => undefined);
  }
}

const NodeHashRow = z.object({ id: z.string(), config_hash: z.string().nullable() });

/** The live nodes' config hashes against each other and this file's: a warning when they differ (a reload that reached only some nodes). */
async function checkNodeConfigs(client: import("pg").default.Client, config: DaemonConfig, state: PostgresStateOptions): Promise<CheckResult> {
  const { rows } = await client.query("SELECT id, config_hash FROM node WHERE seen_at > clock_timestamp() - make_interval(secs => $1) ORDER BY id", [
    (2 * (state.leaseTtlMs ?? 15_000)) / 1000,
  ]);
  const nodes = rows.map((r) => NodeHashRow.parse(r));
  const mine = configHash(config);
  const subject = "node configs";
  if (!nodes.length) return { status: "ok", subject, message: `no node running (this file's hash: ${mine})` };
  const listed = nodes.map((n) => `${n.id} ${n.config_hash ?? "(none reported)"}`).join(", ");
  if (nodes.every((n) => n.config_hash === mine)) return { status: "ok", subject, message: `every running node runs this file (hash ${mine})` };
  return {
    status: "warn",
    subject,
    message: `the running nodes' configs differ from this file (hash ${mine}) or from each other: ${listed}`,
    fix: "give every node the same file and reload each (agent-bridge reload --config FILE on each machine)",
  };
}

/** Reads the credential records the PostgreSQL state keeps (WhatsApp's link), for the channel checks; one connection, opened on first use. */
export function storedCredentials(
  state: PostgresStateOptions,
  timeoutMs: number,
): {
  read(channel: { type: string; id: string }, type: string, id: string): Promise<unknown>;
  close(): Promise<void>;
} {
  let client: Promise<import("pg").default.Client> | undefined;
  const connect = async () => {
    const pg = (await import("pg")).default;
    const c = new pg.Client({ connectionString: state.url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
    c.on("error", () => undefined);
    try {
      await c.connect();
    } catch (error) {
      throw new Error(
        `cannot connect to ${describeUrl(state.url)} (${error instanceof Error ? error.message.replaceAll(state.url, describeUrl(state.url)) : "connection failed"})`,
      );
    }
    return c;
  };
  return {
    async read(channel, type, id) {
      client ??= connect();
      const c = await client;
      const exists = await c.query("SELECT to_regclass('wa_auth') IS NOT NULL AS present");
      if (!(exists.rows[0] as { present: boolean }).present) return undefined;
      const { rows } = await c.query("SELECT v FROM wa_auth WHERE unit = $1 AND type = $2 AND id = $3", [accountKeyOf(channel.type, channel.id), type, id]);
      return (rows[0] as { v: unknown } | undefined)?.v;
    },
    async close() {
      const c = await client?.catch(() => undefined);
      await c?.end().catch(() => undefined);
    },
  };
}
