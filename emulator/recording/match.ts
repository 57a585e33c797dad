/**
 * Which recorded interaction answers a request: the same method, path, query
 * and JSON body (both scrubbed the same way, keys in any order). Equal
 * requests are answered in the order they were recorded, the last one again
 * once they run out (a client polling a status). When nothing is equal, the
 * closest recorded request and what differs, for the strict mode's error.
 */
import { BoundedMap } from "../../shared/util/bounded-map.js";
import { REDACTED } from "../workspace/redact.js";
import type { Interaction, RecordedRequest } from "./format.js";

export interface IncomingRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  /** The JSON body, scrubbed; undefined when there is none or it is not JSON (then it is not compared). */
  body: unknown;
}

/** JSON with object keys sorted, so key order never makes two bodies differ. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const queryOf = (query: RecordedRequest["query"]): string => canonicalJson(query ?? {});

/** The identity of a request for matching. */
export const requestKey = (r: { method: string; path: string; query?: RecordedRequest["query"]; body?: unknown }): string =>
  JSON.stringify([r.method.toUpperCase(), r.path, queryOf(r.query), r.body === undefined ? null : canonicalJson(r.body)]);

export const recordedKey = (request: RecordedRequest): string => requestKey({ ...request, body: request.body_text !== undefined ? undefined : request.body });

/** Where two JSON values differ, as JSON paths with both values (at most `limit`). */
function jsonDifferences(recorded: unknown, sent: unknown, at: string, out: string[], limit: number): void {
  if (out.length >= limit) return;
  if (canonicalJson(recorded) === canonicalJson(sent)) return;
  const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (obj(recorded) && obj(sent)) {
    for (const key of [...new Set([...Object.keys(recorded), ...Object.keys(sent)])].sort())
      jsonDifferences(recorded[key], sent[key], `${at}.${key}`, out, limit);
    return;
  }
  if (Array.isArray(recorded) && Array.isArray(sent) && recorded.length === sent.length) {
    for (const [i, item] of recorded.entries()) jsonDifferences(item, sent[i], `${at}[${i}]`, out, limit);
    return;
  }
  const show = (v: unknown) => (v === undefined ? "absent" : (JSON.stringify(v) ?? "absent").slice(0, 80));
  out.push(`${at}: recorded ${show(recorded)}, sent ${show(sent)}`);
}

export interface Closest {
  index: number;
  request: RecordedRequest;
  differences: string[];
}

/** The recorded request nearest to `incoming`, and what differs; undefined when nothing was recorded. */
export function closestRecorded(interactions: readonly Interaction[], incoming: IncomingRequest): Closest | undefined {
  let best: (Closest & { score: number }) | undefined;
  interactions.forEach(({ request }, index) => {
    const differences: string[] = [];
    let score = 0;
    if (request.method !== incoming.method.toUpperCase()) {
      differences.push(`method: recorded ${request.method}, sent ${incoming.method.toUpperCase()}`);
      score += 100;
    }
    if (request.path !== incoming.path) {
      const a = request.path.split("/");
      const b = incoming.path.split("/");
      differences.push(`path: recorded ${request.path}, sent ${incoming.path}`);
      score += 10 * (Math.abs(a.length - b.length) + a.filter((seg, i) => seg !== b[i]).length);
    }
    if (queryOf(request.query) !== queryOf(incoming.query)) {
      differences.push(`query: recorded ${queryOf(request.query)}, sent ${queryOf(incoming.query)}`);
      score += 5;
    }
    if (request.body_text === undefined) {
      const before = differences.length;
      jsonDifferences(request.body, incoming.body, "body $", differences, before + 3);
      score += differences.length - before;
    }
    if (!best || score < best.score) best = { index, request, differences, score };
  });
  return best && { index: best.index, request: best.request, differences: best.differences };
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const patterns = new BoundedMap<string, RegExp>(1000);

/** A recorded string with `<redacted>` in it stands for any text there (the secret the test sends now). */
function stringMatches(recorded: string, sent: string): boolean {
  if (!recorded.includes(REDACTED)) return recorded === sent;
  let re = patterns.get(recorded);
  if (!re) {
    re = new RegExp(`^${recorded.split(REDACTED).map(escapeRegex).join("[\\s\\S]+")}$`);
    patterns.set(recorded, re);
  }
  return re.test(sent);
}

/** Whether a sent JSON value is what was recorded, a redacted place matching anything. */
export function jsonMatches(recorded: unknown, sent: unknown): boolean {
  if (typeof recorded === "string") return typeof sent === "string" && stringMatches(recorded, sent);
  if (Array.isArray(recorded)) return Array.isArray(sent) && recorded.length === sent.length && recorded.every((r, i) => jsonMatches(r, sent[i]));
  if (recorded && typeof recorded === "object") {
    if (!sent || typeof sent !== "object" || Array.isArray(sent)) return false;
    const a = Object.entries(recorded as Record<string, unknown>).filter(([, v]) => v !== undefined);
    const b = Object.entries(sent as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return a.length === b.length && a.every(([k, v]) => Object.hasOwn(sent, k) && jsonMatches(v, (sent as Record<string, unknown>)[k]));
  }
  return recorded === sent;
}

/** Whether a request is one recorded with secrets redacted (method, path, query and body, redacted places matching anything). */
export function matchesRedacted(request: RecordedRequest, incoming: IncomingRequest): boolean {
  if (request.method !== incoming.method.toUpperCase() || !stringMatches(request.path, incoming.path)) return false;
  if (!jsonMatches(request.query ?? {}, incoming.query)) return false;
  return request.body_text !== undefined || request.body === undefined
    ? incoming.body === undefined || request.body_text !== undefined
    : jsonMatches(request.body, incoming.body);
}
