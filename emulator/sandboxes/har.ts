/**
 * A sandbox's request journal as an HTTP Archive (HAR 1.2), for HAR viewers,
 * browsers' devtools and tools that import HAR. Pure: journal entries in, a
 * HAR log out. The journal keeps what a request sent (its body redacted as the
 * journal redacts it: secrets are `<redacted>`), its status and its time, not
 * headers or the answer's body: the archive says so rather than invent them.
 * The journal's own facts (route, key kind, instance, session, order) ride
 * along as HAR custom fields (`_route`, `_key_kind`, ...).
 */
import { STATUS_CODES } from "node:http";
import type { Har, HarEntry } from "../../shared/schemas/har.js";
import type { EmulatorEnv } from "../env.js";
import type { RequestFilter, SandboxRequestEntry } from "./journal.js";

export interface HarSource {
  /** The emulator's base URL, which the journal's paths are relative to. */
  baseUrl: string;
  /** The emulator's version, as the archive's creator. */
  version: string;
  sandbox: { id: string; name: string };
  /** Requests it received in all (the journal keeps the newest 10,000). */
  received: number;
  /** Whether `entries` are those of a filter. */
  filtered: boolean;
}

const NOT_KEPT = "The emulator's request journal keeps no headers and no answer bodies.";

function entryOf(entry: SandboxRequestEntry, baseUrl: string): HarEntry {
  const url = new URL(entry.path, baseUrl);
  const text = entry.body === null || entry.body === undefined ? undefined : JSON.stringify(entry.body);
  const ms = Math.max(0, entry.ms);
  return {
    startedDateTime: entry.at,
    time: ms,
    request: {
      method: entry.method,
      url: url.href,
      httpVersion: "HTTP/1.1",
      cookies: [],
      headers: [],
      queryString: [...url.searchParams].map(([name, value]) => ({ name, value })),
      ...(text !== undefined ? { postData: { mimeType: "application/json", text, comment: "secrets redacted" } } : {}),
      headersSize: -1,
      bodySize: -1,
    },
    response: {
      status: entry.status,
      statusText: STATUS_CODES[entry.status] ?? "",
      httpVersion: "HTTP/1.1",
      cookies: [],
      headers: [],
      content: { size: -1, mimeType: "", comment: NOT_KEPT },
      redirectURL: "",
      headersSize: -1,
      bodySize: -1,
    },
    cache: {},
    // The journal times the whole exchange: all of it counts as waiting for the answer.
    timings: { send: 0, wait: ms, receive: 0 },
    _seq: entry.seq,
    _route: entry.route,
    _key_kind: entry.key_kind,
    _instance_id: entry.instance_id,
    _session: entry.session,
  };
}

export function journalToHar(entries: readonly SandboxRequestEntry[], source: HarSource): Har {
  const which = `${entries.length} of the ${source.received} requests sandbox ${source.sandbox.id} (${source.sandbox.name}) received`;
  return {
    log: {
      version: "1.2",
      creator: { name: "agent-bridge emulator", version: source.version },
      entries: entries.map((entry) => entryOf(entry, source.baseUrl)),
      comment: `${which}${source.filtered ? ", those that match the filter" : ""} (the journal keeps the newest 10,000). ${NOT_KEPT}`,
    },
  };
}

/** A sandbox's journal, filtered, as the control plane and the in-process handle export it. */
export function sandboxHar(
  env: Pick<EmulatorEnv, "journals" | "publicUrl" | "settings">,
  sandbox: { id: string; name: string },
  filter: RequestFilter = {},
): Har {
  return journalToHar(env.journals.requests(sandbox.id, filter), {
    baseUrl: env.publicUrl(),
    version: env.settings.version,
    sandbox,
    received: env.journals.count(sandbox.id),
    filtered: Object.values(filter).some((v) => v !== undefined),
  });
}
