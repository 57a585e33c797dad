/**
 * The `agent-bridge` command line: every subcommand answers --help and
 * --version, usage errors exit 2 with the reason and the usage, and the
 * compiled binary runs. Parsing is tested in-process (no process needed);
 * one run of the binary shows the build works end to end.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../bin/program.js";
import { BIN, runAgentBridge } from "../helpers/cli.js";

const ROOT = join(import.meta.dirname, "..", "..");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, { writeOut: (t) => (out += t), writeErr: (t) => (err += t) });
  return { code, out, err };
}

describe("agent-bridge", () => {
  it("lists its subcommands", async () => {
    const { code, out } = await run(["--help"]);
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: agent-bridge /);
    for (const sub of ["start", "run", "check", "emulator", "config"]) expect(out).toMatch(new RegExp(`^  ${sub} `, "m"));
  });

  it("names every platform the registry has", async () => {
    const { platforms } = await import("../../daemon/adapters/registry.js");
    const { platformName } = await import("../../daemon/adapters/platform-names.js");
    const { out } = await run(["--help"]);
    const names = platforms.map((p) => platformName(p.type));
    expect(names).toContain("Slack");
    for (const name of names) expect(out.replace(/\s+/g, " ")).toContain(name);
  });

  it.each([[[]], [["start"]], [["run"]], [["check"]], [["emulator"]], [["config"]], [["config", "schema"]]])("%j answers --version and --help", async (sub) => {
    const version = await run([...sub, "--version"]);
    expect(version).toEqual({ code: 0, out: `${VERSION}\n`, err: "" });
    const help = await run([...sub, "--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(new RegExp(`^Usage: agent-bridge${sub.length ? ` ${sub.join(" ")}` : ""} `));
  });

  it("run and check name the config option; emulator every flag", async () => {
    for (const sub of ["run", "check"]) expect((await run([sub, "--help"])).out).toContain("-c, --config <file>");
    const emulator = (await run(["emulator", "--help"])).out;
    for (const flag of [
      "--port",
      "--host",
      "--data-dir",
      "--in-memory",
      "--provision-ms",
      "--seed",
      "--admin-token",
      "--gateway-url",
      "--flush-ms",
      "--upload-limit-mb",
    ]) {
      expect(emulator).toContain(flag);
    }
  });

  it("usage errors exit 2 with the reason and the usage", async () => {
    const cases: [string[], string][] = [
      [["bogus"], "error: unknown command 'bogus'"],
      [["run"], "error: required option '-c, --config <file>' not specified"],
      [["check", "--config"], "error: option '-c, --config <file>' argument missing"],
      [["emulator", "--port", "abc"], "error: option '--port <port>' argument 'abc' is invalid. Expected a whole number."],
      [["emulator", "--port", "70000"], "error: option '--port <port>' argument '70000' is invalid. Expected a port number, 0-65535."],
      [["emulator", "--gateway-url", "not a url"], "error: option '--gateway-url <url>' argument 'not a url' is invalid. Expected an http(s) URL."],
      [["start", "--bogus"], "error: unknown option '--bogus'"],
    ];
    for (const [argv, reason] of cases) {
      const { code, err } = await run(argv);
      expect(code, argv.join(" ")).toBe(2);
      expect(err, argv.join(" ")).toContain(reason);
      expect(err, argv.join(" ")).toContain("Usage: agent-bridge");
    }
  });

  it("config schema prints the committed config.schema.json", async () => {
    const { code, out } = await run(["config", "schema"]);
    expect(code).toBe(0);
    expect(out).toBe(readFileSync(join(ROOT, "config.schema.json"), "utf8"));
  });

  it("is built executable, as npx and a global install run it", () => {
    expect(statSync(BIN).mode & 0o111).toBe(0o111);
    expect(readFileSync(BIN, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  });

  it("runs compiled: dist/bin/agent-bridge.js --version", async () => {
    const cli = runAgentBridge(["--version"]);
    expect(await cli.exited).toBe(0);
    expect(cli.stdout()).toBe(`${VERSION}\n`);
  });
});
