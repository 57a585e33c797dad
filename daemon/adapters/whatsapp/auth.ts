/**
 * The link to the phone lives in a folder of JSON files (Baileys' multi-file
 * auth state). They hold private keys: the folder is owner-only, creds are
 * replaced atomically (a crash mid-write must not cost the link), and nothing
 * here ever logs their content.
 */
import { chmod, mkdir, readdir, rm } from "node:fs/promises";
import { writeFileAtomic } from "../../../shared/durable-files.js";
import { join } from "node:path";
import { BufferJSON, initAuthCreds, proto, useMultiFileAuthState } from "@whiskeysockets/baileys";
import type { CredentialStore } from "../../vocabulary/adapter.js";
import type { AuthenticationState } from "./socket.js";
import { createSerialQueue } from "../../helpers/retry.js";

export interface AuthStore {
  state: AuthenticationState;
  /** Writes the current creds; calls are serialised, each resolves once its write is on disk. */
  saveCreds(): Promise<void>;
  /** Resolves when every save asked for so far has finished (failed ones included). */
  flush(): Promise<void>;
}

export async function openAuthStore(dir: string): Promise<AuthStore> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const { state } = await useMultiFileAuthState(dir);
  // One save at a time, in order: a later save never lands under an earlier one.
  const saves = createSerialQueue<"creds">();
  const credsPath = join(dir, "creds.json");
  const write = (): Promise<void> => writeFileAtomic(credsPath, JSON.stringify(state.creds, BufferJSON.replacer), 0o600);
  return {
    state,
    saveCreds: () => saves.run("creds", write),
    flush: () => saves.idle(),
  };
}

/** Where the link lives: the auth folder (one machine), or the state backend's records (several). */
export interface AuthHome {
  open(): Promise<AuthStore>;
  /** Forgets the link (the phone unlinked this device). */
  clear(): Promise<void>;
}

export const folderAuth = (dir: string): AuthHome => ({ open: () => openAuthStore(dir), clear: async () => void (await clearAuthDir(dir)) });

/** A Baileys value as plain JSON (Buffers as `BufferJSON` objects), and back. */
const toPlain = (value: unknown): unknown => JSON.parse(JSON.stringify(value, BufferJSON.replacer));
const fromPlain = <T>(value: unknown): T => JSON.parse(JSON.stringify(value), BufferJSON.reviver) as T;

/**
 * The link in the state backend's records (several machines): creds under `creds/creds`, each
 * signal key under its type and id, as Baileys' multi-file state keeps them in files. Every write
 * is fenced by the account's lease, so a node that lost it cannot roll the keys back.
 */
export function recordsAuth(records: CredentialStore): AuthHome {
  return {
    async open() {
      const stored = (await records.read("creds", ["creds"])).creds;
      const creds: AuthenticationState["creds"] = stored === undefined ? initAuthCreds() : fromPlain(stored);
      // One save at a time, in order: a later save never lands under an earlier one.
      const saves = createSerialQueue<"creds">();
      const state: AuthenticationState = {
        creds,
        keys: {
          async get(type, ids) {
            const found = await records.read(type, ids);
            const out: Record<string, unknown> = {};
            for (const id of ids) {
              if (found[id] === undefined) continue;
              const value = fromPlain<unknown>(found[id]);
              // As Baileys' own multi-file state does for this type.
              out[id] = type === "app-state-sync-key" ? proto.Message.AppStateSyncKeyData.fromObject(value as object) : value;
            }
            return out as never;
          },
          async set(data) {
            const plain: Record<string, Record<string, unknown>> = {};
            for (const [type, values] of Object.entries(data))
              plain[type] = Object.fromEntries(Object.entries(values ?? {}).map(([id, v]) => [id, v == null ? null : toPlain(v)]));
            await records.write(plain);
          },
        },
      };
      return {
        state,
        saveCreds: () => saves.run("creds", () => records.write({ creds: { creds: toPlain(state.creds) } })),
        flush: () => saves.idle(),
      };
    },
    clear: () => records.clear(),
  };
}

/**
 * Forgets the link: removes the JSON files Baileys keeps (creds, keys,
 * sessions). Only files this adapter's store writes, never the folder
 * recursively, so a mistyped `authDir` cannot take anything else with it.
 */
export async function clearAuthDir(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  const ours = names.filter((n) => n.endsWith(".json") || /\.json\.\d+(?:\.[0-9a-f]+)?\.tmp$/.test(n));
  await Promise.all(ours.map((n) => rm(join(dir, n), { force: true })));
  return ours.length;
}
