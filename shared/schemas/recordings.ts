import { z } from "zod";

/**
 * The control plane's view of a replay (`GET /_emulator/recordings`, docs/testing.md,
 * "Record, replay and drift"): how much of each recording was served. Not part of the service.
 */
export const RecordingUsage = z.strictObject({
  name: z.string(),
  /** The recording's file. */
  file: z.string(),
  /** Recorded requests in it. */
  interactions: z.number().int().min(0),
  /** Recorded requests served at least once. */
  used: z.number().int().min(0),
  /** 1-based numbers of the recorded requests never served. */
  unused: z.array(z.number().int().min(1)),
});
export type RecordingUsage = z.infer<typeof RecordingUsage>;

export const RecordingsView = z.strictObject({
  /** The replay's mode; null when the emulator replays nothing. */
  mode: z.enum(["strict", "record-if-missing", "passthrough"]).nullable(),
  recordings: z.array(RecordingUsage),
});
export type RecordingsView = z.infer<typeof RecordingsView>;
