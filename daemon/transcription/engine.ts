/**
 * What every way of transcribing shares: the audio it is given, and how it
 * fails. An engine only turns one file into text; the limits, the timeout and
 * what the person is told live in transcriber.ts.
 */

/** One audio file to transcribe (a voice note or an audio message, already spooled). */
export interface AudioFile {
  /** A safe base name, no folders. */
  fileName: string;
  mimeType?: string;
  data: Buffer;
}

/** Why a transcription gave no text. `detail` is for the log: never the transcript, never a secret. */
export type TranscriptionFailure = { reason: "failed" | "timeout"; detail: string };

export type EngineResult = { ok: true; text: string } | ({ ok: false } & TranscriptionFailure);

/** Turns one audio file into text; resolves with a failure rather than throwing. `signal` ends it (the caller's timeout, the daemon's halt). */
export interface TranscriptionEngine {
  transcribe(audio: AudioFile, signal: AbortSignal): Promise<EngineResult>;
}
