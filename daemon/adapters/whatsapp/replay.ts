/**
 * The messages taken from the socket that the core has not accepted yet
 * (journal failing, daemon stopping). WhatsApp never delivers a message
 * twice, so they are kept in the adapter's durable state and offered again
 * on the next open, here or after a restart. Pure: the caller stores what
 * `toStored()` returns whenever `note` says the list changed.
 */
import { BufferJSON, type WAMessage } from "@whiskeysockets/baileys";
import { z } from "zod";

/** How many refused messages are kept at most; beyond that the oldest is dropped (and logged). */
export const MAX_UNACCEPTED = 200;

/** What became of one message handed to the core. */
export type HandOverOutcome = "accepted" | "refused" | "skipped";

/** What `note` changed: whether to store the list again, and a message it had to drop for room. */
export interface ReplayChange {
  changed: boolean;
  dropped?: WAMessage;
}

/** A stored message needs a chat and an id to be offered again and matched later; the rest is Baileys' own. */
const storedMessage = z.custom<WAMessage>((value) => {
  if (!value || typeof value !== "object" || !("key" in value)) return false;
  const key: unknown = value.key;
  return Boolean(key) && typeof key === "object";
});

/** One message's identity across sockets and restarts. */
const replayKey = (m: WAMessage): string => `${m.key.remoteJid ?? ""}:${m.key.id ?? ""}`;

export class UnacceptedMessages {
  /** Oldest first; no two share a chat and message id; never more than `#max`. */
  readonly #messages: WAMessage[];
  readonly #max: number;

  /** `saved` is what `toStored()` returned before (anything else counts as an empty list). */
  constructor(saved: unknown, max = MAX_UNACCEPTED) {
    this.#max = max;
    this.#messages = parseStored(saved).slice(-max);
  }

  get size(): number {
    return this.#messages.length;
  }

  /** A copy, oldest first: what to offer the core again once a socket is open. */
  pending(): WAMessage[] {
    return [...this.#messages];
  }

  /** A refused message is kept (once); an accepted or skipped one is let go. */
  note(msg: WAMessage, outcome: HandOverOutcome): ReplayChange {
    const key = replayKey(msg);
    const at = this.#messages.findIndex((m) => replayKey(m) === key);
    if (outcome === "refused" && at < 0) {
      this.#messages.push(msg);
      const dropped = this.#messages.length > this.#max ? this.#messages.shift() : undefined;
      return dropped ? { changed: true, dropped } : { changed: true };
    }
    if (outcome !== "refused" && at >= 0) {
      this.#messages.splice(at, 1);
      return { changed: true };
    }
    return { changed: false };
  }

  /** JSON-safe (Baileys' buffers encoded), or undefined when nothing is kept, so the key is removed. */
  toStored(): unknown {
    return this.#messages.length ? JSON.parse(JSON.stringify(this.#messages, BufferJSON.replacer)) : undefined;
  }
}

/** Decodes a stored list; entries that are not messages are left out. */
function parseStored(saved: unknown): WAMessage[] {
  if (!Array.isArray(saved)) return [];
  let revived: unknown;
  try {
    revived = JSON.parse(JSON.stringify(saved), BufferJSON.reviver);
  } catch {
    return [];
  }
  const list = z.array(z.unknown()).safeParse(revived);
  if (!list.success) return [];
  return list.data.flatMap((entry) => {
    const parsed = storedMessage.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  });
}
