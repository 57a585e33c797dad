/**
 * `GET /_emulator/recordings` (route table: `adminRecordings`): how much of
 * each recording the replay served, for the test helpers' report of
 * recordings no test used.
 */
import type { Handlers } from "../http/router.js";
import type { Replayer } from "./replay.js";

export function recordingHandlers(replay: Replayer | undefined): Pick<Handlers, "adminRecordings"> {
  return { adminRecordings: () => ({ mode: replay?.mode ?? null, recordings: replay?.usage() ?? [] }) };
}
