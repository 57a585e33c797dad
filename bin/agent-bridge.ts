#!/usr/bin/env node
// The `agent-bridge` binary: everything is in program.ts, so tests can run it in-process.
import { main } from "./program.js";

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`agent-bridge: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
