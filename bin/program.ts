/**
 * `agent-bridge`: the one command. Subcommands `start`, `run`, `check`,
 * `emulator`, `conformance` and `config schema`. Only commander (and the platforms' names) is loaded up front; each
 * subcommand imports its own code when it runs, so `--help` stays instant.
 *
 * Exit codes: 0 done, 1 a failure (or a failed check), 2 a usage error.
 */
import type { PairingCommand } from "../daemon/pairing-command.js";
// The platforms' names only (no schema, no library): `--help` stays instant.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
// Types only: erased at run time, so they load nothing.
import type { EmulatorCommandOptions } from "../emulator/cli.js";
import type { ProxyCommandOptions } from "../emulator/proxy/cli.js";
import type { ConformanceCommandOptions } from "../conformance/command.js";

/** package.json sits two levels up from dist/bin/, one from bin/ (tests run the source). */
function packageVersion(): string {
  for (const up of [["..", ".."], [".."]]) {
    try {
      const pkg: unknown = JSON.parse(readFileSync(join(import.meta.dirname, ...up, "package.json"), "utf8"));
      if (pkg && typeof pkg === "object" && "name" in pkg && pkg.name === "agent-bridge" && "version" in pkg) return String(pkg.version);
    } catch {
      // try the next level
    }
  }
  return "unknown";
}

const wholeNumber = (value: string): number => {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`Expected a whole number.`);
  return n;
};

const port = (value: string): number => {
  const n = wholeNumber(value);
  if (n > 65_535) throw new InvalidArgumentError(`Expected a port number, 0-65535.`);
  return n;
};

const nonEmpty =
  (what: string) =>
  (value: string): string => {
    if (value.trim() === "") throw new InvalidArgumentError(`Expected a ${what}, not an empty string.`);
    return value;
  };

const httpUrl = (value: string): string => {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new InvalidArgumentError(`Expected an http(s) URL.`);
  return value;
};

/** Commander's way to take an option several times. */
const collect = (value: string, previous: string[]): string[] => [...previous, value];
/** `a,b.c` -> `["a", "b.c"]`: check ids or areas for `conformance --skip`. */
const checkList = (value: string): string[] => {
  const names = value.split(",").map((n) => n.trim());
  if (names.some((n) => !/^[a-z-]+(\.[a-z-]+)?$/.test(n)))
    throw new InvalidArgumentError("Expected check ids or areas, comma-separated (e.g. messaging,files.delete).");
  return names;
};

export interface ProgramIO {
  writeOut(text: string): void;
  writeErr(text: string): void;
}

/**
 * The command tree. Each action resolves with the exit code it wants;
 * `onExit` receives it (the binary passes it to `process.exit`).
 */
export function createProgram(onExit: (code: number) => void, io?: ProgramIO, platforms?: string): Command {
  const version = packageVersion();
  const program = new Command("agent-bridge");
  program
    .description(`Bridge chat apps${platforms ? ` (${platforms})` : ""} to hosted AI-agent instances, and emulate the hosting service locally.`)
    .version(version, "-V, --version", "print the version")
    .helpOption("-h, --help", "show this help")
    .helpCommand(false)
    .showHelpAfterError()
    .exitOverride()
    .configureOutput(io ? { writeOut: io.writeOut, writeErr: io.writeErr, outputError: io.writeErr } : {});

  const sub = (name: string, description: string) =>
    program.command(name).description(description).version(version, "-V, --version", "print the version").helpOption("-h, --help", "show this help");

  sub("start", "Everything local, nothing to configure: the emulator, the bridge and a chat in this terminal.")
    .option("--data-dir <dir>", "where state lives: emulator/, daemon/, credentials.json", ".data")
    .option("--port <port>", "emulator port (default: a free one)", port)
    .addHelpText("after", "\nEnvironment: LOG_LEVEL (default warn). Logs appear as short notices in the chat.")
    .action(async (opts: { dataDir: string; port?: number }) => {
      const { startLocal } = await import("./start.js");
      onExit(await startLocal({ dataDir: opts.dataDir, port: opts.port ?? 0 }));
    });

  sub("run", "Run the bridge daemon with a config file, against the service it names.")
    .requiredOption("-c, --config <file>", "the daemon's config (JSON with comments); ${ENV_VAR} references are read from the environment")
    .option("--no-check", "skip the service checks at start")
    .addHelpText(
      "after",
      "\nSignals: SIGINT/SIGTERM stop intake, let in-flight replies finish (up to 10 s), keep the rest journaled\nfor the next start, and exit 0. A second SIGINT exits at once (nothing accepted is lost).",
    )
    .action(async (opts: { config: string; check: boolean }) => {
      const { runDaemonCommand } = await import("../daemon/cli.js");
      onExit(await runDaemonCommand({ configFile: opts.config, startupCheck: opts.check }));
    });

  sub("check", "Check a config against the world: the service, each route's instance and key permissions, each channel's token.")
    .requiredOption("-c, --config <file>", "the daemon's config to check")
    .option("--timeout-ms <ms>", "how long each check may take", wholeNumber, 10_000)
    .option("--offline", "check only the file (its fields, variables, routes), as a reload does: nothing is contacted")
    .addHelpText("after", "\nPrints one line per check and exits 1 if any failed.")
    .action(async (opts: { config: string; timeoutMs: number; offline?: boolean }) => {
      const { runCheckCommand } = await import("../daemon/check/command.js");
      onExit(await runCheckCommand({ configFile: opts.config, timeoutMs: opts.timeoutMs, ...(opts.offline ? { offline: true } : {}) }));
    });

  sub("reload", "Make the running daemon read its config file again (as SIGHUP does) and say what came of it.")
    .requiredOption("-c, --config <file>", "the daemon's config: checked here first, and its dataDir names the daemon to ask")
    .option("--timeout-ms <ms>", "how long to wait for the daemon's answer", wholeNumber, 10_000)
    .addHelpText("after", "\nExits 0 when the daemon took the file, 1 when it has problems (the running config stays) or no daemon answered.")
    .action(async (opts: { config: string; timeoutMs: number }) => {
      const { runReloadCommand } = await import("../daemon/reload-command.js");
      onExit(await runReloadCommand({ configFile: opts.config, timeoutMs: opts.timeoutMs }));
    });

  sub("emulator", "Run the hosting service's /v1 API locally, with a fake gateway.")
    .option("--port <port>", "port to listen on (0 picks a free one)", port, 8080)
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--data-dir <dir>", "keep state in DIR", ".data/emulator")
    .option("--in-memory", "keep nothing on disk")
    .option("--provision-ms <ms>", "how long provisioning takes", wholeNumber, 1500)
    .option("--seed <seed>", "repeatable ids, keys and fault draws")
    // From the environment too: in a container, a command line is visible to anyone who can list processes.
    .addOption(
      new Option("--admin-token <token>", "require this bearer on /_emulator (needed off loopback)").env("EMULATOR_ADMIN_TOKEN").argParser(nonEmpty("token")),
    )
    .option("--gateway-url <url>", "send new instances' messages to this Responses server", httpUrl)
    .option("--flush-ms <ms>", "longest a change nobody waits for stays unwritten (writes are answered once on disk)", wholeNumber, 25)
    .option("--upload-limit-mb <n>", "largest upload accepted, MiB", wholeNumber, 50)
    .option("--model-script <file>", "script the fake model with this file's rules (JSON with comments)")
    .option(
      "--fixtures <file>",
      "load this starting state into an empty emulator: organizations with chosen keys, instances, earlier turns, files (JSON with comments)",
    )
    .option("--replay <dir>", "answer /v1 requests from the recordings in DIR (made by `proxy --record`)")
    .addOption(
      new Option(
        "--replay-mode <mode>",
        "what a request with no recording gets: a 404 naming the closest recorded one, a recording made now, or the emulator's own answer",
      )
        .choices(["strict", "record-if-missing", "passthrough"])
        .default(undefined, "strict under CI=true; else record-if-missing with --upstream, passthrough without"),
    )
    .option("--upstream <url>", "the real service, for --replay-mode record-if-missing (and passthrough)", httpUrl)
    .option("--no-replay-pace", "send a replayed stream's events at once instead of at their recorded times")
    .addHelpText("after", "\nPrints `emulator listening on URL` when ready; SIGINT/SIGTERM flush the store and exit 0.")
    .action(async (opts: EmulatorCommandOptions) => {
      const { runEmulatorCommand } = await import("../emulator/cli.js");
      onExit(await runEmulatorCommand(opts));
    });

  sub("proxy", "Forward the /v1 API to a real service, check every exchange against the contract, and optionally record it.")
    .requiredOption("--upstream <url>", "the service to forward to, e.g. https://api.example.com", httpUrl)
    .option("--port <port>", "port to listen on (0 picks a free one)", port, 8090)
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--record <dir>", "write each exchange into DIR/<name>.recording.json (name from the x-agent-bridge-recording header, else `default`)")
    .option("--secret <value>", "also scrub this value from recordings and reports (repeatable)", collect, [])
    .option("--secret-env <name>", "also scrub the value of this environment variable (repeatable)", collect, [])
    .option("--report <file>", "write the drift report as JSON at exit")
    .option("--junit <file>", "write the drift report as JUnit XML at exit")
    .option("--fail-on-drift", "exit 1 at shutdown when anything drifted")
    .option("--timeout-ms <ms>", "longest wait for the upstream's answer headers", wholeNumber, 120_000)
    .addHelpText(
      "after",
      [
        "",
        "Clients get the upstream's answers byte for byte. Authorization headers are never recorded; keys of",
        "this service, model providers and chat platforms are scrubbed wherever they appear.",
        "GET /_proxy/report answers the drift report so far. An unreachable upstream answers 502 with",
        "x-agent-bridge-proxy: upstream-unreachable and is reported apart from drift.",
        "Prints `proxy listening on URL` when ready; SIGINT/SIGTERM write the reports, print a summary and exit.",
      ].join("\n"),
    )
    .action(async (opts: ProxyCommandOptions) => {
      const { runProxyCommand } = await import("../emulator/proxy/cli.js");
      onExit(await runProxyCommand(opts));
    });

  const recordings = sub("recordings", "Recordings made by `proxy --record` or `emulator --replay ... --replay-mode record-if-missing`.").helpCommand(false);
  recordings
    .command("check")
    .description("Fail when a recording in DIR is unreadable or holds anything shaped like a key (for a pre-commit hook or CI).")
    .argument("<dir>", "the recordings directory")
    .helpOption("-h, --help", "show this help")
    .action(async (dir: string) => {
      const { runRecordingsCheck } = await import("../emulator/recording/check-command.js");
      const out = io?.writeOut ?? ((t: string) => process.stdout.write(t));
      const err = io?.writeErr ?? ((t: string) => process.stderr.write(t));
      onExit(await runRecordingsCheck(dir, { out: (l) => out(`${l}\n`), err: (l) => err(`${l}\n`) }));
    });
  const lines = () => {
    const out = io?.writeOut ?? ((t: string) => process.stdout.write(t));
    const err = io?.writeErr ?? ((t: string) => process.stderr.write(t));
    return { out: (l: string) => out(`${l}\n`), err: (l: string) => err(`${l}\n`) };
  };
  recordings
    .command("export-har")
    .description("Write a recording as HAR 1.2 (for browser devtools and other HTTP tools).")
    .argument("<file>", "the recording, e.g. recordings/checkout.recording.json")
    .option("-o, --out <file>", "write the HAR here instead of standard output")
    .option("--origin <url>", "the origin written in the entries' URLs (default: the recorded upstream)", httpUrl)
    .helpOption("-h, --help", "show this help")
    .action(async (file: string, opts: { out?: string; origin?: string }) => {
      const { runExportHar } = await import("../emulator/recording/har-command.js");
      onExit(await runExportHar(file, opts, lines()));
    });
  recordings
    .command("import-har")
    .description("Append the /v1 entries of a HAR 1.2 file to a recording, scrubbed like a recording the proxy makes.")
    .argument("<har>", "the HAR file")
    .requiredOption("--into <dir>", "the recordings directory")
    .requiredOption("--name <name>", "the recording to append to (its file is DIR/<name>.recording.json)")
    .option("--secret <value>", "also scrub this value (repeatable)", collect, [])
    .helpOption("-h, --help", "show this help")
    .action(async (har: string, opts: { into: string; name: string; secret: string[] }) => {
      const { runImportHar } = await import("../emulator/recording/har-command.js");
      onExit(await runImportHar(har, opts, lines()));
    });

  sub("conformance", "Run the API contract's checks against any /v1 server (the hosted service, the emulator) and report.")
    .requiredOption("--base-url <url>", "the server, e.g. https://api.example.com (paths start with /v1)", httpUrl)
    .addOption(
      new Option("--key <key>", "an organization key of a throwaway organization (svc_org_...) holding a model-provider key")
        // From the environment, the key stays out of the process list and the shell's history.
        .env("AGENT_BRIDGE_CONFORMANCE_KEY")
        .makeOptionMandatory(),
    )
    .option("--junit <file>", "where to write the JUnit XML report", "conformance-junit.xml")
    .option("--model <name>", "the model named in message calls (default: one per provider)")
    .option("--allow-signup", "also check a successful signup (it makes an organization the API cannot remove)")
    .option("--timeout-ms <ms>", "longest one request may take", wholeNumber, 120_000)
    .option("--provision-timeout-ms <ms>", "longest wait for the instance to be running", wholeNumber, 300_000)
    .option("--cleanup-timeout-ms <ms>", "how long removing what the run made keeps retrying", wholeNumber, 60_000)
    .option("--skip <checks>", "comma-separated check ids or areas not to run, e.g. messaging,channels.interactive", checkList)
    .option("--sweep", "run no check: remove what killed runs left (instances and scoped keys named conformance-*)")
    .addHelpText(
      "after",
      "\nEverything the run makes is named conformance-<run id> and removed at the end, also after a failure or\nSIGINT/SIGTERM (a second one abandons the cleanup). Exits 0 when every check passed and nothing was left.",
    )
    .action(async (opts: ConformanceCommandOptions) => {
      const { runConformanceCommand } = await import("../conformance/command.js");
      onExit(await runConformanceCommand(opts));
    });

  const pairing = sub("pairing", 'DM pairing: let in people who asked with a code (channels with access.mode "pairing").').helpCommand(false);
  const pairingSub = (name: string, description: string) =>
    pairing
      .command(name)
      .description(description)
      .requiredOption("-c, --config <file>", "the daemon's config (its dataDir is where the daemon, running or not, keeps approvals)")
      .helpOption("-h, --help", "show this help");
  const runPairing = async (configFile: string, command: PairingCommand) => {
    const { runPairingCommand } = await import("../daemon/pairing-command.js");
    onExit(
      await runPairingCommand({ configFile, command, ...(io ? { out: (l: string) => io.writeOut(`${l}\n`), err: (l: string) => io.writeErr(`${l}\n`) } : {}) }),
    );
  };
  pairingSub("approve", "Approve the code a person was given; they are told at once when the daemon runs.")
    .argument("<channel>", "the channel's id (its `id`, or its type)")
    .argument("<code>", "the code the person was shown")
    .action((channel: string, code: string, opts: { config: string }) => runPairing(opts.config, { op: "approve", channel, code }));
  pairingSub("list", "Who is waiting (never their codes) and who was approved.")
    .argument("[channel]", "only this channel")
    .action((channel: string | undefined, opts: { config: string }) => runPairing(opts.config, { op: "list", ...(channel !== undefined ? { channel } : {}) }));
  pairingSub("revoke", "Withdraw an approval: the person's next message asks to pair again.")
    .argument("<channel>", "the channel's id")
    .argument("<user>", "the user id, as `pairing list` shows it")
    .action((channel: string, user: string, opts: { config: string }) => runPairing(opts.config, { op: "revoke", channel, user }));

  const config = sub("config", "Config helpers.").helpCommand(false);
  config
    .command("schema")
    .description("Print the config's JSON Schema (what config.schema.json holds), for editors.")
    .version(version, "-V, --version", "print the version")
    .helpOption("-h, --help", "show this help")
    .action(async () => {
      const { configJsonSchemaText } = await import("../daemon/config/json-schema.js");
      (io?.writeOut ?? ((t: string) => process.stdout.write(t)))(configJsonSchemaText());
      onExit(0);
    });

  return program;
}

/** Parses `argv` (without node and script) and runs; resolves with the exit code. */
export async function main(argv: string[], io?: ProgramIO): Promise<number> {
  let code: number | undefined;
  // The platforms' names are read from the registry only for the help that shows them, so other commands start without it.
  const help = argv.length === 0 || argv[0] === "-h" || argv[0] === "--help";
  const platforms = help ? (await import("../daemon/adapters/platform-names.js")).platformList() : undefined;
  const program = createProgram((c) => (code = c), io, platforms);
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return code ?? 0;
}
