#!/usr/bin/env node
// The `agent-bridge` binary: everything is in program.ts, so tests can run it in-process.
import { main } from "./program.js";

/**
 * Exits once what was written is handed on: stdout and stderr into a pipe are written
 * asynchronously, so exiting at once would cut a long output (`config schema | jq`).
 */
function exitAfterOutput(code: number): void {
  process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
}

main(process.argv.slice(2)).then(exitAfterOutput, (error: unknown) => {
  process.stderr.write(`agent-bridge: ${error instanceof Error ? error.message : String(error)}\n`);
  exitAfterOutput(1);
});
