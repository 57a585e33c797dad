/**
 * Assertions on what a sandbox received, for any test framework: each
 * returns `{ pass, message }` as vitest's and jest's `expect.extend` want,
 * and is asynchronous (a remote sandbox's journal is a request away), so
 * they are awaited: `await expect(sandbox).toHaveReceived({...})`.
 */
import type { ReceivedRequests, RequestFilter, SandboxRequestEntry } from "./remote-sandbox.js";

export interface MatcherResult {
  pass: boolean;
  message: () => string;
}

const describeFilter = (filter: RequestFilter) =>
  Object.entries(filter)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(" ") || "any request";

const describeSeen = (seen: SandboxRequestEntry[]) =>
  seen.length
    ? `It received:\n${seen
        .slice(-20)
        .map((r) => `  ${r.method} ${r.path} -> ${r.status}${r.route ? ` (${r.route})` : ""}`)
        .join("\n")}${seen.length > 20 ? `\n  (and ${seen.length - 20} earlier)` : ""}`
    : "It received no request.";

function asSandbox(received: unknown): ReceivedRequests {
  const r = received as Partial<ReceivedRequests> | null;
  if (!r || typeof r.requests !== "function" || typeof r.unmatched !== "function") {
    throw new TypeError("expect(...) needs a sandbox: the handle of emulator.sandboxes.create() or of createSandbox() from agent-bridge/testing.");
  }
  return r as ReceivedRequests;
}

/** The sandbox received at least one request matching `filter`. */
export async function toHaveReceived(received: unknown, filter: RequestFilter = {}): Promise<MatcherResult> {
  const sandbox = asSandbox(received);
  const matching = await sandbox.requests(filter);
  const pass = matching.length > 0;
  const everything = pass ? [] : await sandbox.requests();
  return {
    pass,
    message: pass
      ? () => `expected sandbox ${sandbox.id} not to have received ${describeFilter(filter)}, but it received ${matching.length}`
      : () => `expected sandbox ${sandbox.id} to have received ${describeFilter(filter)}. ${describeSeen(everything)}`,
  };
}

/** The sandbox received exactly `times` requests matching `filter`. */
export async function toHaveReceivedTimes(received: unknown, filter: RequestFilter, times: number): Promise<MatcherResult> {
  const sandbox = asSandbox(received);
  const matching = await sandbox.requests(filter);
  const everything = await sandbox.requests();
  return {
    pass: matching.length === times,
    message: () =>
      `expected sandbox ${sandbox.id} to have received ${describeFilter(filter)} ${times} time(s), it received it ${matching.length} time(s). ${describeSeen(everything)}`,
  };
}

/** No request of the sandbox matched nothing (an unknown route, a wrong method, an unknown key). */
export async function toHaveNoUnmatchedRequests(received: unknown): Promise<MatcherResult> {
  const sandbox = asSandbox(received);
  const unmatched = await sandbox.unmatched();
  return {
    pass: unmatched.length === 0,
    message: () =>
      unmatched.length === 0
        ? `expected sandbox ${sandbox.id} to have unmatched requests, it has none`
        : `expected sandbox ${sandbox.id} to have no unmatched requests, it has ${unmatched.length}:\n${unmatched
            .map((u) => `  ${u.method} ${u.path}: ${u.reason}${u.closest_route ? ` (closest route: ${u.closest_route})` : ""}`)
            .join("\n")}`,
  };
}

/** The matchers by name, for `expect.extend(agentBridgeMatchers)`. */
export const agentBridgeMatchers = { toHaveReceived, toHaveReceivedTimes, toHaveNoUnmatchedRequests };

/** The matchers' types, merged into each framework's `Matchers` interface (testing/vitest.ts, testing/jest.ts). */
export interface AgentBridgeMatchers {
  /** The sandbox received at least one request matching `filter` (await it). */
  toHaveReceived(filter?: RequestFilter): Promise<void>;
  /** The sandbox received exactly `times` requests matching `filter` (await it). */
  toHaveReceivedTimes(filter: RequestFilter, times: number): Promise<void>;
  /** No request of the sandbox matched nothing (await it). */
  toHaveNoUnmatchedRequests(): Promise<void>;
}
