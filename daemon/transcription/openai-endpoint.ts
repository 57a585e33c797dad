/**
 * An OpenAI-compatible transcription endpoint: the audio posted as
 * multipart/form-data to `<url>/audio/transcriptions` with `model` (and
 * `language`), answered with `{"text": "..."}` (OpenAI's `json` response
 * format, which whisper.cpp's server, faster-whisper servers, Groq and the
 * emulator's fake gateway all speak).
 */
import { z } from "zod";
import type { EngineResult, TranscriptionEngine } from "./engine.js";

export interface OpenAiEndpointOptions {
  url: string;
  apiKey?: string;
  model: string;
  language?: string;
  fetchImpl?: typeof fetch;
}

const TranscriptionResponse = z.object({ text: z.string() });

/** Where the audio is posted: the base with the OpenAI path, or a URL already ending in it. */
export const transcriptionUrl = (url: string): string => (/\/audio\/transcriptions$/.test(url) ? url : `${url}/audio/transcriptions`);

export function createOpenAiEndpoint(options: OpenAiEndpointOptions): TranscriptionEngine {
  const fetchImpl = options.fetchImpl ?? fetch;
  const url = transcriptionUrl(options.url);
  return {
    async transcribe(audio, signal): Promise<EngineResult> {
      const form = new FormData();
      form.set("file", new Blob([new Uint8Array(audio.data)], { type: audio.mimeType ?? "application/octet-stream" }), audio.fileName);
      form.set("model", options.model);
      form.set("response_format", "json");
      if (options.language) form.set("language", options.language);
      let response: Response;
      try {
        response = await fetchImpl(url, {
          method: "POST",
          body: form,
          signal,
          ...(options.apiKey ? { headers: { authorization: `Bearer ${options.apiKey}` } } : {}),
        });
      } catch (error) {
        if (signal.aborted) return { ok: false, reason: "timeout", detail: "the endpoint did not answer in time" };
        return { ok: false, reason: "failed", detail: `the endpoint could not be reached (${error instanceof Error ? error.message : String(error)})` };
      }
      let body: unknown;
      try {
        body = await response.json();
      } catch {
        if (signal.aborted) return { ok: false, reason: "timeout", detail: "the endpoint did not answer in time" };
        return { ok: false, reason: "failed", detail: `HTTP ${response.status}, not JSON` };
      }
      if (!response.ok) return { ok: false, reason: "failed", detail: `HTTP ${response.status}${errorCode(body)}` };
      const parsed = TranscriptionResponse.safeParse(body);
      if (!parsed.success) return { ok: false, reason: "failed", detail: `HTTP ${response.status}, no "text" in the answer` };
      return { ok: true, text: parsed.data.text };
    },
  };
}

/** The OpenAI error's code or type, for the log (never its message: it may quote input). */
function errorCode(body: unknown): string {
  const parsed = z.object({ error: z.object({ code: z.string().nullish(), type: z.string().nullish() }) }).safeParse(body);
  const code = parsed.success ? (parsed.data.error.code ?? parsed.data.error.type) : undefined;
  return code ? ` (${code})` : "";
}
