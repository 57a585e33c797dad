/**
 * The bot's key: generated on first start and kept as a secret. One machine: a
 * file below the data folder, mode 0600, written atomically. Several machines:
 * the state backend's credential record of the account (fenced by its lease),
 * so the key moves with the account as WhatsApp's link does. Never logged.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { getPublicKey } from "nostr-tools/pure";
import { writeFileAtomic } from "../../../shared/durable-files.js";
import type { CredentialStore } from "../../vocabulary/adapter.js";
import { KEY_RECORD, NostrKeyRecord } from "./config.js";

export interface BotKey {
  secretKey: Uint8Array;
  publicKey: string;
  /** The secret in hex, for redaction only. */
  secretHex: string;
}

/** A new key: 32 random bytes (below the curve order in all but a negligible share of draws, which getPublicKey refuses). */
function generate(): NostrKeyRecord {
  for (;;) {
    const secret = randomBytes(32);
    try {
      return { secretKey: secret.toString("hex"), publicKey: getPublicKey(secret) };
    } catch {
      // out of range: draw again
    }
  }
}

const toKey = (record: NostrKeyRecord): BotKey => ({
  secretKey: Uint8Array.from(Buffer.from(record.secretKey, "hex")),
  publicKey: record.publicKey,
  secretHex: record.secretKey,
});

function parseRecord(raw: unknown, where: string): NostrKeyRecord {
  const parsed = NostrKeyRecord.safeParse(raw);
  // Never quote the content: it is a secret.
  if (!parsed.success) throw new Error(`the Nostr key in ${where} is not a valid key record (move it away to generate a new key)`);
  if (getPublicKey(Buffer.from(parsed.data.secretKey, "hex")) !== parsed.data.publicKey)
    throw new Error(`the Nostr key in ${where} does not match its public key`);
  return parsed.data;
}

/** The key in `file`, generated there first when the file does not exist. */
export async function fileKey(file: string): Promise<BotKey> {
  let text: string | undefined;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (text !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      raw = undefined;
    }
    return toKey(parseRecord(raw, file));
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await chmod(dirname(file), 0o700);
  const record = generate();
  await writeFileAtomic(file, `${JSON.stringify(record)}\n`, 0o600);
  return toKey(record);
}

/** The key among the account's credential records, generated there first. */
export async function recordKey(records: CredentialStore): Promise<BotKey> {
  const stored = (await records.read(KEY_RECORD.type, [KEY_RECORD.id]))[KEY_RECORD.id];
  if (stored !== undefined) return toKey(parseRecord(stored, "the state backend"));
  const record = generate();
  await records.write({ [KEY_RECORD.type]: { [KEY_RECORD.id]: record } });
  return toKey(record);
}
