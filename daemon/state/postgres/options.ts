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
  .object({
    kind: z.literal("postgres"),
    /** Connection string, `postgres://user:password@host:port/database`. Required. Its password never appears in logs or errors. */
    url: z.string().min(1),
    /** This node's name in the lease table. Default: `<hostname>-<pid>`; give each daemon its own. */
    nodeId: z.string().min(1).max(200).optional(),
    /** How long a lease lasts without renewal, on the database's clock (default 15000 ms): the longest time an account is silent after its owner dies. */
    leaseTtlMs: z.number().int().min(300).default(15_000),
    /** How often the owner renews its leases (default a third of `leaseTtlMs`). */
    renewEveryMs: z.number().int().positive().optional(),
    /** How often a node looks for free accounts and heartbeats when no `lease_free` notification wakes it (default 2000 ms). */
    pollMs: z.number().int().positive().default(2_000),
    /**
     * Safety margin before the lease's local deadline (default 3000 ms, or a fifth of
     * `leaseTtlMs` when that is smaller): at least one platform send, so a send started
     * just before the deadline ends before anyone else can own the account.
     */
    fenceMarginMs: z.number().int().nonnegative().optional(),
    /** Connections in the write pool (default 10); the `LISTEN` connection is one more. */
    poolSize: z.number().int().min(1).default(10),
    /** Largest attachment stored while its message waits for its turn (default 20 MiB); larger ones are refused with `AttachmentTooLargeError`. */
    maxAttachmentBytes: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .default(20 * 1024 * 1024),
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
