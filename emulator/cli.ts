/**
 * `npm run emulator -- --port P --data-dir DIR ...`: the emulator as a
 * process. Prints `emulator listening on http://HOST:PORT` when ready; on
 * SIGINT/SIGTERM it flushes the store and exits 0.
 */
import { parseArgs } from "node:util";
import { createEmulator } from "./index.js";

const HELP = `Usage: npm run emulator -- [options]

Runs the hosting service's /v1 API locally, with a fake gateway.

Options:
  --port P            port to listen on (default 8080; 0 picks a free one)
  --host H            address to listen on (default 127.0.0.1)
  --data-dir DIR      keep state in DIR (default .data/emulator)
  --in-memory         keep nothing on disk
  --provision-ms MS   how long provisioning takes (default 1500)
  --seed S            repeatable ids, keys and fault draws
  --admin-token T     require this bearer on /_emulator (needed off loopback)
  --gateway-url URL   send new instances' messages to this Responses server
  --flush-ms MS       longest a change waits before it is written (default 25)
  --upload-limit-mb N largest upload accepted, MiB (default 50)
  -h, --help          show this help
`;

function fail(message: string): never {
  process.stderr.write(`emulator: ${message}\n\n${HELP}`);
  process.exit(2);
}

const int = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} needs a whole number, got '${value}'`);
  return n;
};

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs({
      options: {
        port: { type: "string" },
        host: { type: "string" },
        "data-dir": { type: "string" },
        "in-memory": { type: "boolean" },
        "provision-ms": { type: "string" },
        seed: { type: "string" },
        "admin-token": { type: "string" },
        "gateway-url": { type: "string" },
        "flush-ms": { type: "string" },
        "upload-limit-mb": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }).values;
  } catch (error) {
    fail((error as Error).message);
  }
  if (args.help) {
    process.stdout.write(HELP);
    return;
  }
  const port = int("port", args.port, 8080);
  const host = args.host ?? "127.0.0.1";
  const inMemory = args["in-memory"] === true;
  const dataDir = inMemory ? undefined : (args["data-dir"] ?? ".data/emulator");
  if (args["gateway-url"] !== undefined && !URL.canParse(args["gateway-url"])) fail(`--gateway-url is not a URL`);

  let emulator;
  try {
    emulator = await createEmulator({
      dataDir,
      inMemory,
      provisionMs: int("provision-ms", args["provision-ms"], 1500),
      flushMs: int("flush-ms", args["flush-ms"], 25),
      uploadLimitBytes: int("upload-limit-mb", args["upload-limit-mb"], 50) * 1024 * 1024,
      seed: args.seed,
      adminToken: args["admin-token"],
      gatewayUrl: args["gateway-url"],
    });
  } catch (error) {
    // A locked (DataDirLockedError) or unreadable data directory: say why in one line, not a stack trace.
    if (error instanceof Error) {
      process.stderr.write(`emulator: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const url = await emulator.listen(port, host).catch((error: NodeJS.ErrnoException) => {
    process.stderr.write(`emulator: cannot listen on ${host}:${port}: ${error.code ?? error.message}\n`);
    return emulator.close().then(() => process.exit(1));
  });
  const loopback = /^(127\.|localhost$|::1$)/.test(host);
  process.stdout.write(
    [
      `emulator ${emulator.env.settings.version}: ${dataDir ? `state in ${emulator.store.dataDir}` : "in memory"}`,
      `  gateway  ${emulator.gateway.url}`,
      `  openapi  ${url}/v1/openapi.json`,
      `  control  ${url}/_emulator (${args["admin-token"] ? "admin token required" : loopback ? "loopback only" : "off: no --admin-token"})`,
      `  console  ${consoleUrl(url)}${args["admin-token"] ? " (open once with ?token=<admin token>)" : ""}`,
      `emulator listening on ${url}`,
      "",
    ].join("\n"),
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`emulator: ${signal}, flushing and stopping\n`);
    emulator.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`emulator: shutdown failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

void main();

/**
 * The console's URL for a browser on this machine. A wildcard listen address
 * (0.0.0.0, ::) is no host name: the control plane refuses it in `Host`
 * (DNS-rebinding rule), so the loopback address stands in for it.
 */
export function consoleUrl(url: string): string {
  const u = new URL(url);
  if (u.hostname === "0.0.0.0") u.hostname = "127.0.0.1";
  else if (u.hostname === "[::]") u.hostname = "[::1]";
  return `${u.origin}/_emulator/ui/`;
}
