/**
 * The Nostr platform's descriptor: channel schema, its key file default, the
 * `check` (the bot's key and npub, each relay answering its NIP-11 document,
 * each Blossom server answering)
 * and a lazy adapter. Light on purpose: nostr-tools loads only in `create`.
 * The config holds no secret: the key is generated and kept apart (keys.ts).
 */
import { join } from "node:path";
import { probe } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { type ChannelCheckDeps, definePlatform, loadAdapterModule } from "../platform.js";
import { hexToNpub, KEY_RECORD, nostrChannelSchema, type NostrChannelConfig, NostrKeyRecord, nostrUserIds } from "./config.js";

async function readKey(channel: NostrChannelConfig, deps: ChannelCheckDeps): Promise<{ publicKey: string } | { missing: string } | { bad: string }> {
  let raw: unknown;
  if (deps.storedCredential) {
    raw = await deps.storedCredential(channel, KEY_RECORD.type, KEY_RECORD.id);
    if (raw === undefined) return { missing: "no key in the database yet" };
  } else {
    try {
      raw = JSON.parse(await deps.readFile(channel.keyFile));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { missing: `no key file at ${channel.keyFile} yet` };
      return { bad: code ? `cannot read ${channel.keyFile} (${code})` : `${channel.keyFile} is not a key record` };
    }
  }
  const record = NostrKeyRecord.safeParse(raw);
  return record.success ? { publicKey: record.data.publicKey } : { bad: "the stored key is not a valid key record" };
}

/** A relay's http(s) address, where it answers its NIP-11 information document. */
const httpOf = (relay: string) => relay.replace(/^ws/, "http");

async function checkNostr(channel: NostrChannelConfig, deps: ChannelCheckDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const key = await readKey(channel, deps);
  if ("bad" in key)
    return { status: "fail", subject, message: key.bad, fix: "move the file away to let the daemon generate a new key (people then write to the new npub)" };
  const unreachable: string[] = [];
  for (const relay of channel.relays) {
    const got = await probe(deps, httpOf(relay), { headers: { accept: "application/nostr+json" } });
    if (got.kind === "unreachable") unreachable.push(`${relay} (${got.reason})`);
  }
  // A Blossom server answers any request (BUD-02's HEAD /upload without a blob's headers may be a 4xx): reached is enough.
  const blossomDown: string[] = [];
  for (const server of channel.blossomServers) {
    const got = await probe(deps, `${server}/upload`, { method: "HEAD" });
    if (got.kind === "unreachable") blossomDown.push(`${server} (${got.reason})`);
  }
  const who = "publicKey" in key ? `bot ${hexToNpub(key.publicKey)}` : `${key.missing}: the daemon generates one on first start`;
  if (unreachable.length === channel.relays.length)
    return { status: "fail", subject, message: `no relay answers: ${unreachable.join(", ")}; ${who}`, fix: "check the network, or the channel's relays" };
  if (unreachable.length > 0)
    return { status: "warn", subject, message: `${who}; not answering: ${unreachable.join(", ")}`, fix: "check those relays' addresses" };
  const files = channel.blossomServers.length > 0 ? `; ${channel.blossomServers.length - blossomDown.length} Blossom server(s) answer` : "";
  if (blossomDown.length > 0)
    return {
      status: "warn",
      subject,
      message: `${who}; ${channel.relays.length} relay(s) answer${files}; not answering: ${blossomDown.join(", ")}`,
      fix: "check the channel's blossomServers: the bot's files go there",
    };
  return { status: "publicKey" in key ? "ok" : "warn", subject, message: `${who}; ${channel.relays.length} relay(s) answer${files}` };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "nostr-tools": "^2.25.2" };
const loadAdapter = () => loadAdapterModule({ type: "nostr", libraries }, () => import("./index.js"));

export const nostrPlatform = definePlatform({
  type: "nostr",
  name: "Nostr",
  libraries,
  users: nostrUserIds,
  schema: nostrChannelSchema,
  finalize: (channel, { id, dataDir }): NostrChannelConfig => ({ ...channel, id, keyFile: channel.keyFile ?? join(dataDir, "nostr", id, "secret-key") }),
  // The config holds no secret (the key is generated and kept apart; the adapter redacts it).
  secrets: () => [],
  check: checkNostr,
  load: loadAdapter,
  async create(channel, deps) {
    const { createNostrAdapter } = await loadAdapter();
    return createNostrAdapter(channel, deps);
  },
});
