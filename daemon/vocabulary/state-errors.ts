/** What a store fails with, as values that say where: the callers above (the relay, the daemon, the cluster node) branch on these. */

/** A write by a node that no longer holds the unit's lease (another node took it over, or this one self-fenced). */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(
    readonly unit: string,
    /** The epoch this node held. */
    readonly epoch: number,
    /** Why: the current epoch or holder, or "self-fenced". */
    readonly detail: string,
  ) {
    super(`lease ${unit} (epoch ${epoch}) is no longer held by this node: ${detail}. Stop all traffic for this account; the new owner carries on.`);
  }
}

/** The database's schema was written by a newer daemon. */
export class SchemaTooNewError extends Error {
  override readonly name = "SchemaTooNewError";
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `the database's state schema is version ${found}; this daemon knows up to ${supported}. Run the newer daemon version on every node, or point this one at another database.`,
    );
  }
}

/** A stored row does not match its record's schema. */
export class StoredRowError extends Error {
  override readonly name = "StoredRowError";
  constructor(
    readonly table: string,
    readonly key: string,
    detail: string,
  ) {
    super(`${table} ${key}: not a valid stored record (${detail}). Repair or delete the row.`);
  }
}

export class AttachmentTooLargeError extends Error {
  override readonly name = "AttachmentTooLargeError";
  constructor(
    readonly fileName: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super(`attachment ${fileName} is ${size} bytes, over the state backend's limit of ${limit} (maxAttachmentBytes)`);
  }
}

/** A state read or write failed in the database (connection lost, server restarting): the operation and where (a unit, or the database without its password) say where. */
export class StateWriteError extends Error {
  override readonly name = "StateWriteError";
  constructor(
    readonly operation: string,
    readonly where: string,
    cause: unknown,
  ) {
    super(`${operation} for ${where} failed in PostgreSQL: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }

  /**
   * The connection or the server failed (the same write may succeed later), rather than the
   * database refusing this write: no SQLSTATE (the socket failed, a timeout), or class 08
   * (connection), 53 (resources), 57 (shutdown, restart) or 40 (rolled back).
   */
  get transient(): boolean {
    const code = typeof this.cause === "object" && this.cause !== null && "code" in this.cause ? String(this.cause.code) : "";
    return !/^[0-9A-Z]{5}$/.test(code) || ["08", "53", "57", "40"].includes(code.slice(0, 2));
  }
}

/** A message with this dedupe key was accepted already (found when it was stored: on another node, or concurrently). */
export class DuplicateEntryError extends Error {
  override readonly name = "DuplicateEntryError";
  constructor() {
    super("A message with this dedupe key was accepted already.");
  }
}
