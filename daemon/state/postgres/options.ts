/**
 * The PostgreSQL state backend's options, as the config will take them
 * (`"state": { "kind": "postgres", "url": "postgres://..." }`). Defined once
 * here; the daemon's config schema embeds this one.
 */
import { hostname } from "node:os";
import { z } from "zod";

/** Assumed bound on how much faster the local clock may run than the database's (1 %). */
export const CLOCK_DRIFT_RATE = 0.01;

export const PostgresStateOptionsSchema = z
  .strictObject({
    kind: z.literal("postgres").describe('"postgres": several daemons with this config form one bridge, on one PostgreSQL database.'),
    /** Connection string, `postgres://user:password@host:port/database`. Required. Its password never appears in logs or errors. */
    url: z
      .string()
      .min(1)
      .describe(
        'Connection string, "postgres://user:password@host:port/database" (use "${PG_URL}" to keep it out of the file). Required; its password never appears in logs or errors.',
      ),
    /** This node's name in the lease table. Default: `<hostname>-<pid>`; give each daemon its own. */
    nodeId: z.string().min(1).max(200).optional().describe("This node's name in the lease table. Default: <hostname>-<pid>."),
    /** How long a lease lasts without renewal, on the database's clock (default 15000 ms): the longest time an account is silent after its owner dies. */
    leaseTtlMs: z
      .number()
      .int()
      .min(300)
      .default(15_000)
      .describe(
        "How long an account's lease lasts without renewal, on the database's clock: the longest an account is silent after its owner dies, plus a poll. Default: 15000.",
      ),
    /** How often the owner renews its leases (default a third of `leaseTtlMs`). */
    renewEveryMs: z.number().int().positive().optional().describe("How often the owner renews its leases, ms. Default: a third of leaseTtlMs."),
    /** How often a node looks for free accounts and heartbeats when no `lease_free` notification wakes it (default 2000 ms). */
    pollMs: z
      .number()
      .int()
      .positive()
      .default(2_000)
      .describe("How often a node looks for free accounts and heartbeats when no notification wakes it, ms. Default: 2000."),
    /** How long a stopping node (SIGTERM) lets turns in flight finish before handing its accounts over (default 1000 ms); a turn not done by then is asked again by the next owner. */
    handoverGraceMs: z
      .number()
      .int()
      .nonnegative()
      .default(1_000)
      .describe(
        "How long a stopping node lets turns in flight finish before it hands its accounts over, ms; the next owner asks a turn not done by then again. Default: 1000.",
      ),
    /**
     * Safety margin before the lease's local deadline (default 3000 ms, or a fifth of
     * `leaseTtlMs` when that is smaller): at least one platform send, so a send started
     * just before the deadline ends before anyone else can own the account.
     */
    fenceMarginMs: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("How long before its lease's local deadline a node stops all platform traffic, ms. Default: 3000, or a fifth of leaseTtlMs when smaller."),
    /** Connections in the write pool (default 10); the `LISTEN` connection is one more. */
    poolSize: z.number().int().min(1).default(10).describe("Connections in the write pool; the LISTEN connection is one more. Default: 10."),
    /** Largest attachment stored while its message waits for its turn (default 20 MiB); larger ones are refused with `AttachmentTooLargeError`. */
    maxAttachmentBytes: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .default(20 * 1024 * 1024)
      .describe("The largest attachment kept in the database while its message waits for its turn, bytes. Default: 20971520."),
  })
  .refine((o) => (o.renewEveryMs ?? o.leaseTtlMs / 3) < o.leaseTtlMs / 2, {
    message: "renewEveryMs must be under half of leaseTtlMs, so one lost renewal does not lose the lease",
    path: ["renewEveryMs"],
  })
  .refine((o) => resolvedMargin(o) < o.leaseTtlMs * (1 - CLOCK_DRIFT_RATE) - (o.renewEveryMs ?? o.leaseTtlMs / 3), {
    message: "fenceMarginMs leaves no time to act between renewals: make it smaller than leaseTtlMs minus renewEveryMs",
    path: ["fenceMarginMs"],
  });

export type PostgresStateInput = z.input<typeof PostgresStateOptionsSchema>;
export type PostgresStateOptions = z.output<typeof PostgresStateOptionsSchema>;

function resolvedMargin(o: { leaseTtlMs: number; fenceMarginMs?: number | undefined }): number {
  return o.fenceMarginMs ?? Math.min(3_000, Math.floor(o.leaseTtlMs / 5));
}

/** The options with every default filled in. */
export interface ResolvedPostgresOptions {
  url: string;
  nodeId: string;
  leaseTtlMs: number;
  renewEveryMs: number;
  pollMs: number;
  handoverGraceMs: number;
  fenceMarginMs: number;
  poolSize: number;
  maxAttachmentBytes: number;
}

export function resolvePostgresOptions(input: PostgresStateInput): ResolvedPostgresOptions {
  const o = PostgresStateOptionsSchema.parse(input);
  return {
    url: o.url,
    nodeId: o.nodeId ?? `${hostname()}-${process.pid}`,
    leaseTtlMs: o.leaseTtlMs,
    renewEveryMs: o.renewEveryMs ?? Math.floor(o.leaseTtlMs / 3),
    pollMs: o.pollMs,
    handoverGraceMs: o.handoverGraceMs,
    fenceMarginMs: resolvedMargin(o),
    poolSize: o.poolSize,
    maxAttachmentBytes: o.maxAttachmentBytes,
  };
}

/** The URL without its password, for messages. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(an unparseable connection string)";
  }
}
