/**
 * Transcription as the core asks for it: which setting applies to an account
 * (its channel's own, else the top-level one), the limits checked before any
 * work (size, and the length the platform reported), one timeout on the
 * injected clock, and the transcript cut to `maxChars`. The engines
 * (openai-endpoint.ts, local-command.ts) only turn a file into text.
 */
import type { Clock } from "../../shared/clock.js";
import type { TranscriptionConfig } from "../vocabulary/config-fields.js";
import type { AudioFile, TranscriptionEngine } from "./engine.js";
import { createLocalCommand } from "./local-command.js";
import { createOpenAiEndpoint } from "./openai-endpoint.js";

/** What became of one audio file: its text, or why there is none (said to the person in one line). */
export type Transcript = { ok: true; text: string; cut: boolean } | { ok: false; reason: Exclude<TranscriptionOutcome, "ok">; detail?: string };

/** Every way a transcription ends (the `/metrics` outcomes). */
export const TRANSCRIPTION_OUTCOMES = ["ok", "too_large", "too_long", "failed", "timeout", "empty"] as const;
export type TranscriptionOutcome = (typeof TRANSCRIPTION_OUTCOMES)[number];

/** Where a setting can be: the config's top level, and a channel (false: off there). */
type TopLevel = { transcription?: TranscriptionConfig | undefined };
type OnChannel = { transcription?: TranscriptionConfig | false | undefined };

export interface Transcriber {
  /** The limits of the setting that applies (for the log and the person's line). */
  readonly settings: TranscriptionConfig;
  /** `seconds`: the audio's length where the platform said it. `signal`: the daemon's halt (the timeout is the transcriber's own). */
  transcribe(audio: AudioFile & { seconds?: number | undefined }, signal: AbortSignal): Promise<Transcript>;
}

export interface Transcribers {
  /** The transcriber for messages of this account, if transcription is on for it. */
  forAccount(accountId: string): Transcriber | undefined;
}

/** The setting that applies to a channel: its own (false: off), else the top-level one. */
export function transcriptionFor(config: TopLevel, channel: OnChannel | undefined): TranscriptionConfig | undefined {
  const own = channel?.transcription;
  if (own === false) return undefined;
  return own ?? config.transcription;
}

/** The engine a setting names. `fetchImpl`: tests' and the emulator's own HTTP stack may stand in. */
export function engineFor(settings: TranscriptionConfig, fetchImpl?: typeof fetch): TranscriptionEngine {
  if (settings.kind === "command") return createLocalCommand({ command: settings.command });
  return createOpenAiEndpoint({
    url: settings.url,
    model: settings.model,
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    ...(settings.language ? { language: settings.language } : {}),
    ...(fetchImpl ? { fetchImpl } : {}),
  });
}

/** The limits, the timeout and the cut around one engine. */
export function createTranscriber(settings: TranscriptionConfig, engine: TranscriptionEngine, clock: Clock): Transcriber {
  return {
    settings,
    async transcribe(audio, signal) {
      if (audio.data.length > settings.maxBytes) return { ok: false, reason: "too_large" };
      if (audio.seconds !== undefined && audio.seconds > settings.maxSeconds) return { ok: false, reason: "too_long" };
      const timeout = new AbortController();
      const timer = clock.setTimeout(() => timeout.abort(), settings.timeoutMs);
      try {
        const result = await engine.transcribe(audio, AbortSignal.any([timeout.signal, signal]));
        if (!result.ok) return { ok: false, reason: timeout.signal.aborted ? "timeout" : result.reason, detail: result.detail };
        return cutTranscript(result.text, settings.maxChars);
      } finally {
        timer.cancel();
      }
    },
  };
}

/** The transcript with surrounding white space gone and at most `maxChars` characters (whole code points); none at all is `empty`. Pure. */
export function cutTranscript(raw: string, maxChars: number): Transcript {
  const text = raw.trim();
  if (!text) return { ok: false, reason: "empty" };
  const points = Array.from(text);
  if (points.length <= maxChars) return { ok: true, text, cut: false };
  return { ok: true, text: points.slice(0, maxChars).join("").trimEnd(), cut: true };
}

/** One transcriber per setting in the config, looked up by account. */
export function createTranscribers(deps: {
  config: TopLevel;
  clock: Clock;
  channelFor(accountId: string): OnChannel | undefined;
  fetchImpl?: typeof fetch;
}): Transcribers {
  const bySetting = new Map<TranscriptionConfig, Transcriber>();
  return {
    forAccount(accountId) {
      const settings = transcriptionFor(deps.config, deps.channelFor(accountId));
      if (!settings) return undefined;
      let transcriber = bySetting.get(settings);
      if (!transcriber) {
        transcriber = createTranscriber(settings, engineFor(settings, deps.fetchImpl), deps.clock);
        bySetting.set(settings, transcriber);
      }
      return transcriber;
    },
  };
}
