/**
 * Where a Nostr message's files come from: nowhere yet. NIP-17 file messages
 * (kind 15) point at an encrypted file on a web server the sender chose; they
 * are not read, so a message brings text only (docs/platforms.md says so).
 */
import type { FileSource } from "../hand-over.js";

export const nostrFiles: FileSource<never> = {
  fetch: async () => {
    throw new Error("Nostr messages bring no files here");
  },
};
