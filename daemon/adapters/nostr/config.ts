/**
 * A Nostr channel's config: the zod schema (the one definition, every option
 * described with its default, so config.schema.json carries it) and the type
 * inferred from it. The bot's key is not here: it is generated on first start
 * and kept as a secret (keys.ts), in `keyFile` or, on several machines, in the
 * state backend's credential records.
 */
import { z } from "zod";
import { accessSchema, channelCommon, groupContextSchema, httpUrl } from "../../vocabulary/config-fields.js";

export const nostrChannelSchema = z.strictObject({
  type: z.literal("nostr").describe('A Nostr bot reached by private direct messages and NIP-17 chat rooms: "nostr".'),
  ...channelCommon,
  access: accessSchema
    .prefault({})
    .describe(
      "Who is heard: public keys (64 hex digits, or npub1...). A NIP-17 room's chat id (for `groups`) is its other members' hex keys, sorted, joined by commas. Default: nobody (an empty allowlist).",
    ),
  groupContext: groupContextSchema,
  requireMention: z
    .boolean()
    .default(true)
    .describe("In NIP-17 rooms (several members), answer only a message that names the bot: `nostr:npub1...` of the bot, or one of `names`. Default true."),
  names: z
    .array(z.string().trim().min(2, "a name of at least 2 characters"))
    .default([])
    .describe(
      'Names people call the bot by in rooms ("@helper", "helper:" or the word alone): a message naming one addresses the bot. Default: none (the npub only).',
    ),
  blossomServers: z
    .array(httpUrl)
    .default([])
    .describe(
      "Blossom servers (BUD-01/02) the bot uploads its encrypted files to, tried in order: with none, the bot sends no files (no `files` capability). Default: none.",
    ),
  relays: z
    .array(z.url({ protocol: /^wss?$/, error: "must be a ws(s) URL" }))
    .min(1, "name at least one relay")
    .describe("Relays the bot reads its direct messages from and publishes its replies to (each one; an event is counted once). Required."),
  keyFile: z.string().min(1).optional().describe("File holding the bot's generated secret key (mode 0600). Default: <dataDir>/nostr/<id>/secret-key."),
  lookbackSeconds: z
    .number()
    .int()
    .min(0)
    .default(172_800 + 600)
    .describe(
      "How far before the last time the bot was connected a resubscription asks relays to look back: NIP-17 gift wraps carry a timestamp up to two days in the past. Default 173400 (two days and ten minutes).",
    ),
});

/** A Nostr channel once finalised: the account id and the key file are always set. */
export type NostrChannelConfig = z.output<typeof nostrChannelSchema> & { id: string; keyFile: string };

// Public keys as people write them: 64 hex digits, or the bech32 `npub1...` form (NIP-19),
// decoded here without the platform library so the config's user lists may name an npub.
const CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

function polymod(values: number[]): number {
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GENERATOR[i] ?? 0;
  }
  return chk;
}

/** The hex public key of an `npub1...`, or undefined when it is not a valid one. */
export function npubToHex(text: string): string | undefined {
  const s = text.toLowerCase();
  if (!s.startsWith("npub1") || s.length !== 63) return undefined;
  const data: number[] = [];
  for (const c of s.slice(5)) {
    const v = CHARSET.indexOf(c);
    if (v < 0) return undefined;
    data.push(v);
  }
  const hrp = [..."npub"].map((c) => c.charCodeAt(0));
  const expanded = [...hrp.map((c) => c >> 5), 0, ...hrp.map((c) => c & 31)];
  if (polymod([...expanded, ...data]) !== 1) return undefined;
  let acc = 0;
  let bits = 0;
  const bytes: number[] = [];
  for (const v of data.slice(0, -6)) {
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((acc >> bits) & 0xff);
    }
  }
  return bytes.length === 32 ? Buffer.from(bytes).toString("hex") : undefined;
}

/** An npub becomes its hex key; anything else is returned as it came (the rule must recognise only its own spellings). */
export const nostrUserIds = {
  normalize: (id: string): string => {
    const trimmed = id.trim();
    if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return trimmed.toLowerCase();
    return npubToHex(trimmed) ?? id;
  },
};

/** The `npub1...` of a hex public key (NIP-19), for people to paste into their clients. */
export function hexToNpub(hex: string): string {
  const bytes = [...Buffer.from(hex, "hex")];
  const data: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      data.push((acc >> bits) & 31);
    }
  }
  if (bits > 0) data.push((acc << (5 - bits)) & 31);
  const hrp = [..."npub"].map((c) => c.charCodeAt(0));
  const expanded = [...hrp.map((c) => c >> 5), 0, ...hrp.map((c) => c & 31)];
  const mod = polymod([...expanded, ...data, 0, 0, 0, 0, 0, 0]) ^ 1;
  const checksum = Array.from({ length: 6 }, (_, i) => (mod >>> (5 * (5 - i))) & 31);
  return `npub1${[...data, ...checksum].map((v) => CHARSET[v]).join("")}`;
}

// The bot's key as it is kept (keys.ts): the secret key and the public key it gives, so
// `check` can show the npub without loading the platform library. Never logged.
export const NostrKeyRecord = z.strictObject({
  secretKey: z.string().regex(/^[0-9a-f]{64}$/),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/),
});
export type NostrKeyRecord = z.infer<typeof NostrKeyRecord>;

/** Where it lives among the state backend's credential records (several machines). */
export const KEY_RECORD = { type: "nostr-key", id: "bot" } as const;
