/**
 * `agent-bridge`: the package's main entry, for code that wants both halves
 * a test suite uses. The same are at `agent-bridge/emulator` and
 * `agent-bridge/client`; test-framework helpers at `agent-bridge/testing`.
 */
export * from "./emulator/index.js";
export * from "./shared/client/index.js";
