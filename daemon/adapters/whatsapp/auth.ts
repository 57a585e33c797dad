/**
 * The link to the phone lives in a folder of JSON files (Baileys' multi-file
 * auth state). They hold private keys: the folder is owner-only, creds are
 * replaced atomically (a crash mid-write must not cost the link), and nothing
 * here ever logs their content.
 */
import { chmod, mkdir, readdir, rm } from "node:fs/promises";
import { writeFileAtomic } from "../../../shared/durable-files.js";
import { join } from "node:path";
import { BufferJSON, useMultiFileAuthState } from "@whiskeysockets/baileys";
import type { AuthenticationState } from "./socket.js";

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
  let chain: Promise<void> = Promise.resolve();
  const credsPath = join(dir, "creds.json");
  const write = (): Promise<void> => writeFileAtomic(credsPath, JSON.stringify(state.creds, BufferJSON.replacer), 0o600);
  return {
    state,
    saveCreds() {
      const next = chain.then(write);
      chain = next.catch(() => undefined);
      return next;
    },
    flush: () => chain,
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
