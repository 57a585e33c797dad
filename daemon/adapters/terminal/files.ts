/** Where a terminal message's files come from: nowhere, a typed line brings none. */
import type { DeclaredFile, FileSource } from "../hand-over.js";

export const terminalFiles: FileSource<DeclaredFile> = {
  fetch: () => Promise.reject(new Error("a typed line brings no files")),
};
