/** The daemon's durable-file helpers live in `shared/durable-files.ts`, shared with the emulator. */
export { acquireDirLock, DataDirLockedError, syncDirectory, writeFileAtomic, writeFileDurable, type DirLock } from "../../shared/durable-files.js";
