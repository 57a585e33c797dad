/**
 * A sandbox of a running emulator, driven over HTTP: what a test in another
 * process (a vitest or jest worker, `node:test`, or any suite that only has
 * the emulator's URL) holds. The same methods as the in-process handle
 * (`emulator.sandboxes.create()`), asynchronous because they are requests.
 * Every answer is parsed with the control plane's own schemas.
 */
import { z } from "zod";
import type { FaultRuleRequest } from "../shared/schemas/admin.js";
import { FaultRule } from "../shared/schemas/admin.js";
import { Har } from "../shared/schemas/har.js";
import { Sandbox, SandboxClockMove, SandboxCreated, SandboxRequests, UnmatchedRequest } from "../shared/schemas/sandboxes.js";

/** Which requests to count or list: every given field must match (`route` is the operation id, e.g. `createInstance`). */
export interface RequestFilter {
  method?: string;
  path?: string;
  route?: string;
  status?: number;
  instance_id?: string;
  session?: string;
}
export type SandboxRequestEntry = z.output<typeof SandboxRequests>["requests"][number];
export type UnmatchedEntry = z.output<typeof UnmatchedRequest>;
export type SandboxView = z.output<typeof Sandbox>;
export type ClockMove = z.output<typeof SandboxClockMove>;

/** The part of a sandbox the matchers read: the in-process handle and {@link RemoteSandbox} both have it. */
export interface ReceivedRequests {
  readonly id: string;
  requests(filter?: RequestFilter): SandboxRequestEntry[] | Promise<SandboxRequestEntry[]>;
  unmatched(): UnmatchedEntry[] | Promise<UnmatchedEntry[]>;
}

export interface RemoteSandbox extends ReceivedRequests {
  readonly id: string;
  /** The organization key of the sandbox's first organization (`Authorization: Bearer ...`). */
  readonly apiKey: string;
  readonly organizationId: string;
  /** The emulator's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  requests(filter?: RequestFilter): Promise<SandboxRequestEntry[]>;
  /** How many requests match `filter` (all it received without one). */
  count(filter?: RequestFilter): Promise<number>;
  unmatched(): Promise<UnmatchedEntry[]>;
  /** Its requests as an HTTP Archive (HAR 1.2), filtered like `requests` (docs/emulator.md, "HAR export"). */
  har(filter?: RequestFilter): Promise<Har>;
  /** Moves its clock forward; resolves with what the move made happen. */
  advance(ms: number): Promise<ClockMove>;
  /** Sets its clock to a later time (ISO or epoch ms). */
  setClock(to: string | number): Promise<ClockMove>;
  /** A fault rule that fires on its requests only. */
  addFault(rule: z.input<typeof FaultRuleRequest>): Promise<z.output<typeof FaultRule>>;
  /** Moves its first organization to another plan (`shrimp` allows 1 instance, `crab` 10, `lobster` 500). */
  setTier(tier: "shrimp" | "crab" | "lobster"): Promise<void>;
  /** Scripts the fake model for its instances (docs/api-contract.md, "Scripting the model"). */
  setModelScript(script: Record<string, unknown>): Promise<void>;
  info(): Promise<SandboxView>;
  reset(): Promise<void>;
  remove(): Promise<void>;
}

export interface CreateSandboxOptions {
  /** The emulator's base URL. Required. */
  url: string;
  /** A label for people reading the journal. Default: the sandbox's id. */
  name?: string;
  /** Where its clock starts (ISO). Default: the emulator's now. */
  clockStart?: string;
  /** The control plane's bearer token, when the emulator was started with `--admin-token`. Default: none. */
  adminToken?: string;
  /** Cancels every request of this sandbox's calls. Default: none. */
  signal?: AbortSignal;
}

/** Thrown when the control plane answers an error: says which call and what it answered. */
export class SandboxRequestError extends Error {
  override readonly name = "SandboxRequestError";
  constructor(
    readonly call: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${call} answered ${status}: ${body.slice(0, 500)}`);
  }
}

/** Creates a sandbox on the emulator at `options.url` (`POST /_emulator/sandboxes`). */
export async function createSandbox(options: CreateSandboxOptions): Promise<RemoteSandbox> {
  const base = options.url.replace(/\/+$/, "");
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...(options.adminToken ? { authorization: `Bearer ${options.adminToken}` } : {}),
  };
  const call = async <T>(method: string, path: string, schema: z.ZodType<T> | undefined, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new SandboxRequestError(`${method} ${path}`, res.status, text);
    return schema ? schema.parse(JSON.parse(text)) : (undefined as T);
  };
  const created = await call("POST", "/_emulator/sandboxes", SandboxCreated, {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.clockStart !== undefined ? { clock_start: options.clockStart } : {}),
  });
  const at = `/_emulator/sandboxes/${encodeURIComponent(created.id)}`;
  const query = (filter: RequestFilter = {}) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v !== undefined) params.set(k, String(v));
    const text = params.toString();
    return text ? `?${text}` : "";
  };
  return {
    id: created.id,
    apiKey: created.api_key,
    organizationId: created.organization_id,
    url: base,
    requests: async (filter) => (await call("GET", `${at}/requests${query(filter)}`, SandboxRequests)).requests,
    count: async (filter) => (await call("GET", `${at}/requests${query(filter)}`, SandboxRequests)).count,
    unmatched: () => call("GET", `${at}/unmatched`, z.array(UnmatchedRequest)),
    har: (filter) => call("GET", `${at}/requests.har${query(filter)}`, Har),
    advance: (ms) => call("POST", `${at}/clock`, SandboxClockMove, { advance_ms: ms }),
    setClock: (to) => call("POST", `${at}/clock`, SandboxClockMove, { set: new Date(to).toISOString() }),
    addFault: (rule) => call("POST", `${at}/faults`, FaultRule, rule),
    setTier: async (tier) => void (await call("POST", `/_emulator/organizations/${encodeURIComponent(created.organization_id)}/tier`, z.unknown(), { tier })),
    setModelScript: async (script) => void (await call("PUT", `${at}/model-script`, z.unknown(), script)),
    info: () => call("GET", at, Sandbox),
    reset: async () => void (await call("POST", `${at}/reset`, Sandbox)),
    remove: () => call("DELETE", at, undefined),
  };
}
