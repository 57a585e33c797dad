/**
 * Record and replay in a test suite (docs/testing.md, "Record, replay and
 * drift"): `useRecording(name)` gives each test a sandbox named after its
 * recording, so the emulator started with `replay` answers that test's
 * requests from `<name>.recording.json`; at the end of the run, a report of
 * the recordings (and recorded requests) no test used.
 */
import { RECORDING_HEADER, RecordingName } from "../emulator/recording/format.js";
import { type RecordingUsage, RecordingsView } from "../shared/schemas/recordings.js";
import type { RemoteSandbox } from "./remote-sandbox.js";
import { type SandboxPerTestOptions, sandboxPerTest } from "./sandbox-per-test.js";

/** The current test's sandbox (call it inside a test), with the recording it replays. */
export type RecordingGetter = (() => RemoteSandbox) & {
  /** The recording's name: the sandbox's name, and its file `<name>.recording.json`. */
  readonly recording: string;
  /** Send these on requests that carry no sandbox key (through the proxy while recording, a signup). */
  readonly headers: Readonly<Record<string, string>>;
};

type Hook = (fn: () => Promise<void>) => void;

export function recordingPerTest(
  hooks: { beforeEach: Hook; afterEach: Hook },
  url: () => string,
  name: string,
  options: SandboxPerTestOptions = {},
): RecordingGetter {
  const checked = RecordingName.safeParse(name);
  if (!checked.success) throw new TypeError(`useRecording: '${name}' cannot name a recording file: ${checked.error.issues[0]?.message ?? "bad name"}`);
  const getter = sandboxPerTest(hooks, url, { ...options, name });
  return Object.assign(getter, { recording: name, headers: { [RECORDING_HEADER]: name } });
}

/** How much of each recording the emulator at `url` has served (`GET /_emulator/recordings`). */
export async function recordingUsage(url: string, adminToken?: string): Promise<RecordingUsage[]> {
  const res = await fetch(`${url.replace(/\/+$/, "")}/_emulator/recordings`, { headers: adminToken ? { authorization: `Bearer ${adminToken}` } : {} });
  if (!res.ok) throw new Error(`recordings usage answered ${res.status}`);
  return RecordingsView.parse(await res.json()).recordings;
}

/** A few lines naming each recording no test used, and recorded requests never replayed; empty when all were used. */
export function unusedRecordingsReport(usage: readonly RecordingUsage[]): string {
  const lines: string[] = [];
  for (const r of usage) {
    if (r.interactions > 0 && r.used === 0) lines.push(`  ${r.name} (${r.file}): no test used it`);
    else if (r.unused.length) lines.push(`  ${r.name} (${r.file}): request(s) #${r.unused.join(", #")} of ${r.interactions} never replayed`);
  }
  return lines.length ? `recordings not used by this run:\n${lines.join("\n")}\n` : "";
}
