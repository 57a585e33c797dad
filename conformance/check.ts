/**
 * What a conformance check is, what it may use, and the assertions checks
 * share. A check asserts what the contract promises (statuses, the facts of
 * an answer, access rules); the shapes are judged by the validator on every
 * exchange it makes.
 */
import type { OperationId } from "../shared/api.js";
import type { CallOptions, Exchange } from "./exchange.js";

/** What earlier checks learned or made, for later ones; a fact a check could not learn stays undefined. */
export interface Facts {
  organizationId?: string | undefined;
  /** The organization's name when the run began (restored at the end). */
  originalName?: string | undefined;
  /** The providers it held keys for when the run began. */
  originalProviders?: string[];
  /** A provider it holds a key for: instances are created with it. */
  provider?: string | undefined;
  /** The run's instance. */
  instanceId?: string | undefined;
  /** Set once the run's instance is `running`. */
  running?: boolean;
  /** A scoped key with `read` on the run's instance. */
  scopedKey?: { id: string; raw: string };
  /** A skill the run installed. */
  skill?: string;
  /** The run's folder in the instance's tree. */
  folder?: string;
}

export interface RunInfo {
  /** Random per run: every name the kit gives starts with `conformance-<runId>`. */
  runId: string;
  prefix: string;
  /** The model named in message calls. */
  model?: string;
  /** Whether a signup may be made (it leaves an organization behind: the API cannot remove one). */
  allowSignup: boolean;
  /** Longest wait for an instance to become `running`, ms. */
  provisionTimeoutMs: number;
}

/** The undo steps a check can ask for; each sweeps by name, so a lost answer leaves nothing behind. */
export interface Cleanup {
  /** Delete every instance whose name starts with the run's prefix. */
  instances(): void;
  /** Revoke every active scoped key whose name starts with the run's prefix. */
  keys(): void;
  /** Give the organization its name back. */
  restoreName(name: string): void;
  /** Remove this provider's key, which the run added. */
  removeProvider(provider: string): void;
}

export interface CheckContext {
  call(operation: OperationId, options?: CallOptions): Promise<Exchange>;
  facts: Facts;
  /** Registers what the run must undo, before the check makes it. */
  cleanup: Cleanup;
  run: RunInfo;
  signal: AbortSignal;
  /** Waits (between polls of a status), on the run's clock. */
  sleep(ms: number): Promise<void>;
}

export interface Skipped {
  skipped: string;
}
export const skip = (reason: string): Skipped => ({ skipped: reason });

export interface Check {
  /** `area.what`, e.g. `instances.create`: the name in the table and the JUnit file. */
  id: string;
  /** What the contract says, in a line. */
  title: string;
  /** Facts it cannot run without: when one is missing it is skipped, naming it. */
  needs?: readonly (keyof Facts)[];
  /** When it fails on its own (not by drift), no later check runs: each is skipped, naming it. */
  gate?: true;
  run(ctx: CheckContext): Promise<void | Skipped>;
}

/** A check's own finding (as opposed to a bug in the kit or a broken connection). */
export class CheckFailure extends Error {
  override name = "CheckFailure";
}

export function that(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailure(message);
}

const excerpt = (ex: Exchange): string => {
  const text = ex.events ? `${ex.events.length} events` : ex.text.replace(/\s+/g, " ");
  return text.length > 300 ? `${text.slice(0, 300)}…` : text || "(empty body)";
};

const said = (ex: Exchange) => `${ex.method} ${ex.path} answered ${ex.status}`;

export function expectStatus(ex: Exchange, expected: number): void {
  that(ex.status === expected, `${said(ex)}, expected ${expected}: ${excerpt(ex)}`);
}

/** The body as an object, or a failure naming the exchange. */
export function jsonObject(ex: Exchange): Record<string, unknown> {
  that(ex.json !== null && typeof ex.json === "object" && !Array.isArray(ex.json), `${said(ex)} without a JSON object: ${excerpt(ex)}`);
  return ex.json as Record<string, unknown>;
}

export function jsonArray(ex: Exchange): unknown[] {
  that(Array.isArray(ex.json), `${said(ex)} without a JSON array: ${excerpt(ex)}`);
  return ex.json;
}

export const field = (value: unknown, name: string): unknown =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>)[name] : undefined;

export const stringField = (value: unknown, name: string): string | undefined => {
  const v = field(value, name);
  return typeof v === "string" ? v : undefined;
};

/** An error answer of the contract's usual form: `expected` and `{"detail": "<sentence>"}`. */
export function expectDetail(ex: Exchange, expected: number): string {
  expectStatus(ex, expected);
  const detail = field(jsonObject(ex), "detail");
  that(typeof detail === "string" && detail.length > 0, `${said(ex)} without a sentence in detail: ${excerpt(ex)}`);
  return detail;
}

/** A 422 whose `detail` lists an issue at `loc` (compared as a prefix). */
export function expectInvalid(ex: Exchange, loc: readonly (string | number)[]): void {
  expectStatus(ex, 422);
  const detail = field(jsonObject(ex), "detail");
  that(Array.isArray(detail), `${said(ex)} with detail not a list of issues: ${excerpt(ex)}`);
  const at = detail.map((issue) => field(issue, "loc"));
  const found = at.some((l) => Array.isArray(l) && loc.every((part, i) => l[i] === part));
  that(found, `${said(ex)} without an issue at ${JSON.stringify(loc)}; issues at ${JSON.stringify(at)}`);
}

/** An empty 204. */
export function expectEmpty(ex: Exchange): void {
  expectStatus(ex, 204);
  that(ex.bytes.length === 0, `${said(ex)} with a body, expected none: ${excerpt(ex)}`);
}
