import { z } from "zod";
import { JournalEntry } from "./admin.js";
import { ConnectionType } from "./channels.js";
import { Instance } from "./instances.js";
import { ScopedKey } from "./keys.js";
import { Organization } from "./organization.js";

/** What the web console reads under `/_emulator/console` (control plane): views only, never a secret. */
export const ConsoleOrganization = Organization.extend({ keys: z.array(ScopedKey) });
export const ConsoleState = z.object({
  version: z.string(),
  now: z.string(),
  organizations: z.array(ConsoleOrganization),
  instances: z.array(Instance),
});

export const ConsoleSession = z.object({
  session: z.string(),
  head_id: z.string(),
  turns: z.number().int().min(1),
  updated_at: z.string(),
  /** The newest input's first 120 characters, secrets redacted. */
  last_input: z.string(),
});

export const Usage = z.object({ input_tokens: z.number().int().min(0), output_tokens: z.number().int().min(0), total_tokens: z.number().int().min(0) });
/** One output item of a turn that was more than text, as the console shows it (texts redacted). */
export const ConsoleAnswerItem = z.discriminatedUnion("type", [
  z.object({ type: z.literal("message"), text: z.string(), json: z.boolean() }),
  z.object({ type: z.literal("refusal"), refusal: z.string() }),
  z.object({ type: z.literal("reasoning"), summary: z.string() }),
  z.object({ type: z.literal("function_call"), call_id: z.string(), name: z.string(), arguments: z.string() }),
]);
/** What the fake model answered beyond text: the script rule that fired, tool calls, structured output. */
export const ConsoleAnswer = z.object({
  rule: z.string().nullable(),
  status: z.enum(["completed", "incomplete"]),
  items: z.array(ConsoleAnswerItem),
});

export const ConsoleTurn = z.object({
  id: z.string(),
  session: z.string(),
  previous_response_id: z.string().nullable(),
  input_text: z.string(),
  output_text: z.string(),
  model: z.string(),
  created_at: z.string(),
  usage: Usage,
  /** Present when the turn was more than the echo's text. */
  answer: ConsoleAnswer.optional(),
});

/** `limit`: the newest turns given, oldest first (1..1000, default 100). */
export const TurnsQuery = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) });

export const SessionTurns = z.object({
  instance_id: z.string(),
  session: z.string(),
  head_id: z.string().nullable(),
  total: z.number().int().min(0),
  turns: z.array(ConsoleTurn),
});
export const ResponseChain = z.object({
  instance_id: z.string(),
  session: z.string(),
  response_id: z.string(),
  total: z.number().int().min(1),
  turns: z.array(ConsoleTurn),
});

export const ConsoleChannel = z.object({
  channel: z.string(),
  label: z.string(),
  connection_type: ConnectionType,
  enabled: z.boolean(),
  connected: z.boolean(),
  awaiting_scan: z.boolean(),
  /** A PNG data URL of the pairing QR while a scan is awaited. */
  qr_png: z.string().nullable(),
  connected_at: z.string().nullable(),
  restarts: z.number().int().min(0),
});

/** A request-journal line with its sequence number (the bodies are fetched by it). */
export const RequestLine = JournalEntry.extend({ id: z.number().int().min(1) });
export const CapturedBody = z.object({
  content_type: z.string().nullable(),
  /** Parsed JSON (redacted), redacted text, a note such as `[binary, 120 bytes]`, or null. */
  body: z.unknown(),
  truncated: z.boolean(),
});
export const RequestDetail = RequestLine.extend({ request: CapturedBody, response: CapturedBody });
export const RequestIdParam = z.object({ request_id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });
