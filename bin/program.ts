/**
 * `agent-bridge`: the one command. Subcommands `start`, `run`, `check`,
 * `emulator` and `config schema`. Only commander is loaded up front; each
 * subcommand imports its own code when it runs, so `--help` stays instant.
 *
 * Exit codes: 0 done, 1 a failure (or a failed check), 2 a usage error.
 */
import type { PairingCommand } from "../daemon/pairing-command.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
// Types only: erased at run time, so they load nothing.
import type { EmulatorCommandOptions } from "../emulator/cli.js";

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

export interface ProgramIO {
  writeOut(text: string): void;
  writeErr(text: string): void;
}

/**
 * The command tree. Each action resolves with the exit code it wants;
 * `onExit` receives it (the binary passes it to `process.exit`).
 */
export function createProgram(onExit: (code: number) => void, io?: ProgramIO): Command {
  const version = packageVersion();
  const program = new Command("agent-bridge");
  program
    .description("Bridge chat apps (Telegram, Discord, WhatsApp, the terminal) to hosted AI-agent instances, and emulate the hosting service locally.")
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
    .addHelpText("after", "\nPrints one line per check and exits 1 if any failed.")
    .action(async (opts: { config: string; timeoutMs: number }) => {
      const { runCheckCommand } = await import("../daemon/check/command.js");
      onExit(await runCheckCommand({ configFile: opts.config, timeoutMs: opts.timeoutMs }));
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
    .addHelpText("after", "\nPrints `emulator listening on URL` when ready; SIGINT/SIGTERM flush the store and exit 0.")
    .action(async (opts: EmulatorCommandOptions) => {
      const { runEmulatorCommand } = await import("../emulator/cli.js");
      onExit(await runEmulatorCommand(opts));
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
  const program = createProgram((c) => (code = c), io);
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return code ?? 0;
}
