/**
 * The `file_links` settings of a channel whose platform takes files only by
 * public URL (LINE, Google Chat): the one zod definition both channels'
 * schemas use. Without `public_base_url` the channel sends no files (the core
 * says in the chat that a file stays in the agent's workspace) and `check`
 * warns.
 */
import { z } from "zod";
import { type ProbeDeps, probe } from "../../helpers/probe.js";

const MIB = 1024 * 1024;

/** An https URL with a path, no query or fragment; its path is what the channel's endpoint serves files under. */
const publicBaseUrl = z
  .string()
  .trim()
  .regex(/^https:\/\/[^\s/?#]+\/[^\s?#]*[^\s?#/]$/, "must be an https URL with a path and no query, e.g. https://bot.example.com/line/files")
  .refine((url) => URL.canParse(url), "must be a URL");

export const fileLinksSchema = z
  .strictObject({
    public_base_url: publicBaseUrl
      .optional()
      .describe(
        "The public https URL under which the channel's own HTTP endpoint serves reply files, e.g. https://bot.example.com/line/files: a reverse proxy that terminates TLS forwards that path, unchanged, to the endpoint's host and port (like the webhook path). Absent: the channel sends no files (the chat is told a file stays in the agent's workspace) and `check` warns.",
      ),
    ttl_hours: z
      .number()
      .min(1)
      .max(720)
      .default(168)
      .describe("How long a file's link works, hours; after that it answers 404 and the file is deleted. Default 168 (a week)."),
    max_file_mb: z
      .number()
      .positive()
      .max(1024)
      .default(100)
      .describe("The largest reply file served, MiB; a larger one is not sent (the chat is told). Default 100."),
    max_total_mb: z
      .number()
      .positive()
      .max(1_048_576)
      .default(2048)
      .describe("Disk the channel's served files may take, MiB; past it the links closest to expiry are ended early. Default 2048."),
  })
  .prefault({})
  .describe("Reply files served to the platform by unguessable, expiring links on the channel's endpoint (the platform takes files only by URL).");

export type FileLinksConfig = z.output<typeof fileLinksSchema>;

/** The path part of `public_base_url` (no trailing slash): what the endpoint answers files under. */
export const filesPathOf = (publicBaseUrl: string): string => new URL(publicBaseUrl).pathname.replace(/\/+$/, "");

export const bytesOfMb = (mb: number): number => Math.floor(mb * MIB);

/** The path under `public_base_url` the file route answers for `check`, and the header it answers with. */
export const PROBE_PATH = "probe";
export const PROBE_HEADER = "x-agent-bridge-files";
/** The longest `check` waits for the probe through the public URL. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * What `check` says of a channel's files out, with a HEAD of `<public_base_url>/probe`: the route
 * reached through the public URL (ok), or not (a warning: the platform could not fetch the files;
 * the daemon may also just not be running), or no files sent at all (a warning).
 */
export async function checkFiles(publicBaseUrl: string | undefined, deps: ProbeDeps): Promise<{ warn: boolean; note: string; fix?: string }> {
  const plain = filesNote(publicBaseUrl);
  if (publicBaseUrl === undefined) return plain;
  const base = publicBaseUrl.replace(/\/+$/, "");
  const got = await probe({ ...deps, timeoutMs: Math.min(deps.timeoutMs, PROBE_TIMEOUT_MS) }, `${base}/${PROBE_PATH}`, { method: "HEAD" });
  if (got.kind === "answer" && got.status === 204 && got.headers[PROBE_HEADER] === "1") return { warn: false, note: `${plain.note} (reachable)` };
  const why = got.kind === "unreachable" ? got.reason : `HTTP ${got.status}${got.status === 204 ? " from something else" : ""}`;
  return {
    warn: true,
    note: `${plain.note}, but a HEAD of ${base}/${PROBE_PATH} did not reach the channel's file route (${why}): the platform cannot fetch them`,
    fix: `with the bridge running, have your reverse proxy forward ${filesPathOf(publicBaseUrl)}/ unchanged to the channel's http.host:http.port`,
  };
}

/** What `check` says of a channel's files out without asking the network: served at the base URL, or not sent at all (a warning). */
export function filesNote(publicBaseUrl: string | undefined): { warn: boolean; note: string; fix?: string } {
  if (publicBaseUrl !== undefined) return { warn: false, note: `reply files served at ${publicBaseUrl}/…` };
  return {
    warn: true,
    note: "no file_links.public_base_url: files the agent makes are not sent (the chat is told they stay in its workspace)",
    fix: "set file_links.public_base_url to an https URL your reverse proxy forwards to the channel's endpoint (docs/platforms.md)",
  };
}
