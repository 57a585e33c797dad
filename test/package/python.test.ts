/**
 * The Python package (testing/python) as a Python team gets it: a clean copy of the folder
 * installed with `pip install --no-index` into a virtual environment (its build backend is in the
 * folder, standard library only, so nothing comes from an index), then
 * - its own tests against one emulator process named by AGENT_BRIDGE_URL: every verb, types
 *   checked against its control-plane manifest (client-contract.test.ts checks that manifest
 *   against the emulator's OpenAPI document), with each Python that has pytest (PATH's, and
 *   Debian's /usr/bin/python3 when it is another one: pytest 7 and a current pytest); no emulator
 *   process outliving a start timeout, close() or a killed interpreter;
 * - 8 workers at once on that emulator, a sandbox per test and no cross-talk (pytest-xdist when
 *   installed, else 8 pytest processes);
 * - the plugin starting its own emulator from the `agent-bridge` command, replaying a recording;
 * - the Python examples of docs/testing.md, as written.
 * Reads junit XML for per-test results. About 30-40 s on two cores.
 */
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SharedEmulator, startSharedEmulator } from "../../testing/shared-emulator.js";
import { lacks, onPath } from "../helpers/system-programs.js";

const ROOT = join(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "dist", "bin", "agent-bridge.js");
/** How the plugin starts the emulator itself (a string it splits like a shell). */
const COMMAND = `'${process.execPath}' '${BIN}'`;
const WORKERS = 8;

interface Run {
  status: number | null;
  output: string;
}

/** Runs a program and collects its output (asynchronous, so several can run at once). */
function run(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PIP_NO_INDEX: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1", PYTHONDONTWRITEBYTECODE: "1", ...options.env };
    for (const [k, v] of Object.entries(options.env ?? {})) if (v === undefined) delete env[k];
    const child = spawn(cmd, args, { cwd: options.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", (error) => resolve({ status: null, output: `${output}\n${error.message}` }));
    child.on("close", (status) => resolve({ status, output }));
  });
}

interface Case {
  name: string;
  classname: string;
  outcome: "passed" | "failed" | "skipped";
  message: string;
  properties: Record<string, string>;
}

/** The test cases of a pytest junit XML report. */
function junitCases(file: string): Case[] {
  const xml = readFileSync(file, "utf8");
  const cases: Case[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attr = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(m[1]!)?.[1] ?? "";
    const body = m[2] ?? "";
    const properties: Record<string, string> = {};
    for (const p of body.matchAll(/<property name="([^"]*)" value="([^"]*)"/g)) properties[p[1]!] = p[2]!;
    const failed = /<(failure|error)\b[^>]*message="([^"]*)"/.exec(body);
    const skipped = /<skipped\b[^>]*message="([^"]*)"/.exec(body);
    cases.push({
      name: attr("name"),
      classname: attr("classname"),
      outcome: failed ? "failed" : skipped ? "skipped" : "passed",
      message: failed?.[2] ?? skipped?.[1] ?? "",
      properties,
    });
  }
  return cases;
}

/** The guide's Python examples: blocks (python, ini) whose first line is `# file: PATH`, and the recording. */
function guideExamples(): Map<string, string> {
  const guide = readFileSync(join(ROOT, "docs", "testing.md"), "utf8");
  const files = new Map<string, string>();
  for (const m of guide.matchAll(/```(?:python|ini)\n# file: (\S+)\n([\s\S]*?)```/g)) files.set(m[1]!, m[2]!);
  for (const m of guide.matchAll(/```json file=(recordings\/\S+)\n([\s\S]*?)```/g)) files.set(m[1]!, m[2]!);
  return files;
}

/** The Pythons to test with: PATH's, and Debian's when it is another interpreter with pytest. */
function pythons(): string[] {
  const onPathPython = onPath("python3");
  if (!onPathPython) return [];
  const found = [onPathPython];
  const debian = "/usr/bin/python3";
  try {
    const real = (python: string) => execFileSync(python, ["-c", "import sys; print(sys.executable, sys.prefix)"], { encoding: "utf8" }).trim();
    if (existsSync(debian) && real(debian) !== real(onPathPython)) {
      execFileSync(debian, ["-m", "pytest", "--version"], { stdio: "ignore" });
      found.push(debian);
    }
  } catch {
    // Debian's Python without pytest: PATH's alone
  }
  return found;
}

describe.skipIf(lacks("pytest", import.meta.url))("the Python package, installed as a user installs it", () => {
  let work: string;
  let emulator: SharedEmulator;
  /** Per Python: its virtual environment's interpreter, and the clean copy of the package it holds. */
  const venvs = new Map<string, { python: string; copy: string }>();
  const interpreters = pythons();

  beforeAll(async () => {
    work = realpathSync(mkdtempSync(join(tmpdir(), "agent-bridge-python-")));
    emulator = await startSharedEmulator({ mode: "process", bin: BIN, provisionMs: 1000 });
    await Promise.all(
      interpreters.map(async (python, i) => {
        const home = join(work, `python-${i}`);
        // A clean copy, laid out as the guide's install command expects (a checkout beside the project).
        const copy = join(home, "agent-bridge", "testing", "python");
        cpSync(join(ROOT, "testing", "python"), copy, { recursive: true, filter: (src) => !/(__pycache__|\.pytest_cache|\.egg-info)/.test(src) });
        // --system-site-packages: the venv sees the system's pytest (no index to install it from),
        // and its pip (installing into the venv), so no pip of its own is set up (5-10 s saved).
        const venv = await run(python, ["-m", "venv", "--system-site-packages", "--without-pip", join(home, ".venv")], { cwd: home });
        expect(venv.status, venv.output).toBe(0);
        const pip = await run(join(home, ".venv", "bin", "python"), ["-m", "pip", "install", "--no-index", "--no-cache-dir", "./agent-bridge/testing/python"], {
          cwd: home,
        });
        expect(pip.status, pip.output).toBe(0);
        venvs.set(python, { python: join(home, ".venv", "bin", "python"), copy });
      }),
    );
  }, 180_000);
  afterAll(async () => {
    await emulator?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const pytest = (python: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
    run(python, ["-m", "pytest", "-p", "no:cacheprovider", ...args], { cwd, env });

  it("finds the Pythons to test with", () => {
    expect(interpreters.length).toBeGreaterThan(0);
    expect([...venvs.keys()].sort()).toEqual([...interpreters].sort());
  });

  it("its own tests pass against the emulator AGENT_BRIDGE_URL names, with each Python (the plugin loaded by its entry point)", async () => {
    for (const [python, venv] of venvs) {
      const report = join(work, `own-${venvs.size}-${encodeURIComponent(python)}.xml`);
      // The command too: one test starts an emulator of its own, with an admin token.
      const result = await pytest(venv.python, ["tests", `--junitxml=${report}`], venv.copy, {
        AGENT_BRIDGE_URL: emulator.url,
        AGENT_BRIDGE_COMMAND: COMMAND,
      });
      expect(result.status, `${python}:\n${result.output}`).toBe(0);
      const cases = junitCases(report);
      expect(cases.filter((c) => c.outcome !== "passed")).toEqual([]);
      const names = new Set(cases.map((c) => c.name.replace(/\[.*$/, "")));
      for (const verb of [
        "test_the_operations_it_calls_are_the_manifests",
        "test_each_type_has_the_manifests_fields_and_types",
        "test_an_answer_that_is_not_the_documents_is_refused_naming_the_field",
        "test_requests_count_and_assert_received",
        "test_unmatched_requests_name_the_closest_route",
        "test_a_fault_fires_on_this_sandbox_only",
        "test_the_clock_moves_for_this_sandbox_only",
        "test_a_scripted_model_answers_in_a_named_session",
        "test_a_tier_limits_instances",
        "test_har_reset_and_remove",
        "test_a_fixture_seeds_the_sandbox",
        "test_a_sandbox_clock_can_start_elsewhere",
        "test_an_emulator_with_an_admin_token_needs_it_on_the_control_plane",
        "test_a_sandbox_sees_only_its_own_world",
        "test_a_start_that_times_out_leaves_no_grandchild",
        "test_close_stops_an_emulator_that_is_a_grandchild",
        "test_the_emulator_dies_with_its_interpreter",
      ])
        expect(names, `${python}: ${verb}`).toContain(verb);
    }
  }, 120_000);

  it(`${WORKERS} workers share one emulator, a sandbox per test and no cross-talk (pytest-xdist when installed, else ${WORKERS} processes)`, async () => {
    const copies = 3;
    const withXdist: { python: string; copy: string }[] = [];
    for (const v of venvs.values()) if ((await run(v.python, ["-c", "import xdist"], { cwd: work })).status === 0) withXdist.push(v);
    const hasXdist = withXdist.length > 0;
    const venv = withXdist[0] ?? venvs.get(interpreters[0]!)!;
    const reports: string[] = [];
    if (hasXdist) {
      // No URL: the controller starts the emulator from the command, once, for every worker.
      const report = join(work, "xdist.xml");
      reports.push(report);
      const result = await pytest(
        venv.python,
        ["-n", String(WORKERS), "tests/test_isolation.py", `--junitxml=${report}`, "--agent-bridge-provision-ms=1000"],
        venv.copy,
        {
          AGENT_BRIDGE_URL: undefined,
          AGENT_BRIDGE_COMMAND: COMMAND,
          AGENT_BRIDGE_ISOLATION_COPIES: String(copies * WORKERS),
        },
      );
      expect(result.status, result.output).toBe(0);
      expect(result.output).toMatch(new RegExp(`\\bgw${WORKERS - 1}\\b`)); // the last of the workers ran
    } else {
      const results = await Promise.all(
        Array.from({ length: WORKERS }, (_, i) => {
          const report = join(work, `process-${i}.xml`);
          reports.push(report);
          return pytest(venv.python, ["tests/test_isolation.py", `--junitxml=${report}`], venv.copy, {
            AGENT_BRIDGE_URL: emulator.url,
            AGENT_BRIDGE_ISOLATION_COPIES: String(copies),
          });
        }),
      );
      for (const result of results) expect(result.status, result.output).toBe(0);
    }
    const cases = reports.flatMap(junitCases);
    expect(cases).toHaveLength(copies * WORKERS);
    expect(cases.filter((c) => c.outcome !== "passed")).toEqual([]);
    // Every test reached the same emulator.
    expect(new Set(cases.map((c) => c.properties.emulator)).size).toBe(1);
    expect(cases[0]!.properties.emulator).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  }, 120_000);

  it("the plugin starts its own emulator from the agent-bridge command, replays a recording, and names the recorded request no test made", async () => {
    const venv = venvs.get(interpreters[0]!)!;
    const report = join(work, "replay.xml");
    const result = await pytest(
      venv.python,
      ["tests/replay", "--agent-bridge-replay", "tests/replay/recordings", "--agent-bridge-replay-mode", "strict", `--junitxml=${report}`],
      venv.copy,
      { AGENT_BRIDGE_URL: undefined, AGENT_BRIDGE_COMMAND: COMMAND },
    );
    expect(result.status, result.output).toBe(0);
    expect(junitCases(report).map((c) => [c.name, c.outcome])).toEqual([
      ["test_answers_from_the_recording_named_after_the_sandbox", "passed"],
      ["test_a_request_with_no_recording_is_refused_naming_the_closest", "passed"],
    ]);
    expect(result.output).toContain(
      "recordings not used by this run:\n  greeting (tests/replay/recordings/greeting.recording.json): request(s) #2 of 2 never replayed",
    );
  }, 60_000);

  it("runs the Python examples of docs/testing.md as written (the official openai client where it is installed)", async () => {
    const examples = guideExamples();
    expect([...examples.keys()].sort()).toEqual([
      "pytest.ini",
      "recordings/greeting.recording.json",
      "replay/test_greeting.py",
      "tests/test_openai_client.py",
      "tests/test_support_bot.py",
    ]);
    const venv = venvs.get(interpreters[0]!)!;
    const project = join(dirname(dirname(dirname(venv.copy))), "project");
    for (const [path, text] of examples) {
      mkdirSync(dirname(join(project, path)), { recursive: true });
      writeFileSync(join(project, path), text);
    }
    const env = { AGENT_BRIDGE_URL: undefined, AGENT_BRIDGE_COMMAND: COMMAND };
    const report = join(work, "guide.xml");
    const main = await pytest(venv.python, [`--junitxml=${report}`], project, env);
    expect(main.status, main.output).toBe(0);
    const cases = junitCases(report);
    const hasOpenai = (await run(venv.python, ["-c", "import openai"], { cwd: work })).status === 0;
    expect(cases.map((c) => [c.name, c.outcome])).toEqual([
      ["test_the_openai_client_talks_to_a_session", hasOpenai ? "passed" : "skipped"],
      ["test_creates_the_bots_instance_and_talks_to_it", "passed"],
      ["test_a_fault_touches_this_tests_sandbox_only", "passed"],
    ]);
    if (!hasOpenai) expect(cases[0]!.message).toContain("openai");
    const replay = await pytest(venv.python, ["replay", "--agent-bridge-replay", "recordings", "--agent-bridge-replay-mode", "strict"], project, env);
    expect(replay.status, replay.output).toBe(0);
    expect(replay.output).toMatch(/1 passed/);
    expect(replay.output).toContain("recordings not used by this run:\n  greeting (recordings/greeting.recording.json): request(s) #2 of 2 never replayed");
  }, 60_000);
});
