/**
 * The Go module (testing/go) as a Go team gets it: a clean copy of the folder, required by another
 * module with a `replace` (no module proxy: GOPROXY=off, standard library only), then
 * - its own tests with `go test -parallel 8 -json` against one emulator process named by
 *   AGENT_BRIDGE_URL: every verb, 24 parallel tests each in its own sandbox with no cross-talk,
 *   its types checked against its control-plane manifest (client-contract.test.ts checks that
 *   manifest against the emulator's OpenAPI document), a recording replayed by an emulator the
 *   test starts itself; no emulator process outliving a start timeout, Close or a killed test binary;
 * - Main starting its own emulator from the `agent-bridge` command when no URL is given;
 * - the Go examples of docs/testing.md, as written, in a module of their own.
 * The build cache is kept under node_modules/.cache (content-addressed; later runs reuse it).
 */
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SharedEmulator, startSharedEmulator } from "../../testing/shared-emulator.js";
import { lacks } from "../helpers/system-programs.js";

const ROOT = join(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "dist", "bin", "agent-bridge.js");
/** How Main starts the emulator itself (split on spaces). */
const COMMAND = `${process.execPath} ${BIN}`;

interface Run {
  status: number | null;
  output: string;
}

interface TestEvent {
  Action: string;
  Test?: string;
  Package?: string;
  Output?: string;
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const all: NodeJS.ProcessEnv = { ...process.env, ...env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete all[k];
    const child = spawn(cmd, args, { cwd, env: all, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", (error) => resolve({ status: null, output: `${output}\n${error.message}` }));
    child.on("close", (status) => resolve({ status, output }));
  });
}

/** Each test's outcome from `go test -json` (pass, fail, skip), and the output that is not JSON. */
function outcomes(output: string): { results: Map<string, string>; text: string } {
  const results = new Map<string, string>();
  let text = "";
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) {
      text += `${line}\n`;
      continue;
    }
    const event = JSON.parse(line) as TestEvent;
    if (event.Output) text += event.Output;
    if (event.Test && ["pass", "fail", "skip"].includes(event.Action)) results.set(event.Test, event.Action);
  }
  return { results, text };
}

/** The guide's Go examples: blocks (go, text) whose first line is `// file: PATH`, and the recording. */
function guideExamples(): Map<string, string> {
  const guide = readFileSync(join(ROOT, "docs", "testing.md"), "utf8");
  const files = new Map<string, string>();
  for (const m of guide.matchAll(/```(?:go|text)\n\/\/ file: (\S+)\n([\s\S]*?)```/g)) files.set(m[1]!, m[2]!);
  for (const m of guide.matchAll(/```json file=(recordings\/\S+)\n([\s\S]*?)```/g)) files.set(m[1]!, m[2]!);
  return files;
}

describe.skipIf(lacks("go", import.meta.url))("the Go module, required with a replace as a user requires it", () => {
  let work: string;
  let project: string;
  let emulator: SharedEmulator;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    work = realpathSync(mkdtempSync(join(tmpdir(), "agent-bridge-go-")));
    project = join(work, "project");
    // A clean copy, laid out as the guide's replace expects (a checkout beside the module).
    cpSync(join(ROOT, "testing", "go"), join(project, "agent-bridge", "testing", "go"), { recursive: true });
    const cache = join(ROOT, "node_modules", ".cache", "agent-bridge", "go-build");
    mkdirSync(cache, { recursive: true });
    env = {
      GOPATH: join(work, "gopath"),
      GOCACHE: cache,
      GOPROXY: "off",
      GOFLAGS: "-mod=mod",
      GOTOOLCHAIN: "local",
      GOTELEMETRY: "off",
      AGENT_BRIDGE_URL: undefined,
      AGENT_BRIDGE_COMMAND: undefined,
    };
    emulator = await startSharedEmulator({ mode: "process", bin: BIN, provisionMs: 1000 });
  }, 60_000);
  afterAll(async () => {
    await emulator?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const module = () => join(project, "agent-bridge", "testing", "go");

  it("its own tests pass in parallel (go test -parallel 8) against the emulator AGENT_BRIDGE_URL names: every verb, 24 sandboxes at once, a recording replayed", async () => {
    const vet = await run("go", ["vet", "./..."], module(), env);
    expect(vet.status, vet.output).toBe(0);
    // The replay and admin-token tests start emulators of their own, from the command.
    const result = await run("go", ["test", "-count=1", "-json", "-parallel", "8", "./..."], module(), {
      ...env,
      AGENT_BRIDGE_URL: emulator.url,
      AGENT_BRIDGE_COMMAND: COMMAND,
    });
    const { results, text } = outcomes(result.output);
    expect(result.status, text).toBe(0);
    expect([...results].filter(([, action]) => action !== "pass")).toEqual([]);
    for (const name of [
      "TestTheOperationsItCallsAreTheManifests",
      "TestEachTypeHasTheManifestsFieldsAndTypes",
      "TestAnAnswerThatIsNotTheDocumentsIsRefusedNamingTheField",
      "TestRequestsCountAndAssertReceived",
      "TestUnmatchedRequestsNameTheClosestRoute",
      "TestAFaultFiresOnThisSandboxOnly",
      "TestTheClockMovesForThisSandboxOnly",
      "TestAScriptedModelAnswersInANamedSession",
      "TestATierLimitsInstances",
      "TestHARResetAndRemove",
      "TestAFixtureSeedsTheSandbox",
      "TestASandboxClockCanStartElsewhere",
      "TestAnEmulatorWithAnAdminTokenNeedsItOnTheControlPlane",
      "TestARecordingIsReplayed",
      "TestAStartThatTimesOutLeavesNoGrandchildAndReturns",
      "TestCloseStopsAnEmulatorThatIsAGrandchild",
      "TestTheEmulatorDiesWithItsOwner",
    ])
      expect(results.get(name), name).toBe("pass");
    expect([...results.keys()].filter((name) => name.startsWith("TestSandboxesAreIsolated/"))).toHaveLength(24);
  }, 240_000);

  it("Main starts its own emulator from the agent-bridge command when no URL is given", async () => {
    const result = await run("go", ["test", "-count=1", "-json", "-run", "TestASandboxHasItsOwnKeyAndOrganization", "./..."], module(), {
      ...env,
      AGENT_BRIDGE_COMMAND: COMMAND,
    });
    const { results, text } = outcomes(result.output);
    expect(result.status, text).toBe(0);
    expect(results.get("TestASandboxHasItsOwnKeyAndOrganization")).toBe("pass");
  }, 120_000);

  it("without an emulator or a command, Main says what to do and the run fails", async () => {
    const result = await run("go", ["test", "-count=1", "-run", "TestASandboxHasItsOwnKeyAndOrganization", "./..."], module(), {
      ...env,
      AGENT_BRIDGE_COMMAND: `${process.execPath} ${join(work, "missing.js")}`,
    });
    expect(result.status).not.toBe(0);
    expect(result.output).toContain("agentbridgetest: no emulator:");
    expect(result.output).toContain("exited before listening");
  }, 120_000);

  it("runs the Go examples of docs/testing.md as written, in a module that requires it with a replace", async () => {
    const examples = guideExamples();
    expect([...examples.keys()].sort()).toEqual(["go/go.mod", "go/support_bot_test.go", "recordings/greeting.recording.json"]);
    for (const [path, text] of examples) {
      mkdirSync(dirname(join(project, path)), { recursive: true });
      writeFileSync(join(project, path), text);
    }
    const result = await run("go", ["test", "-count=1", "-json", "-parallel", "8", "./..."], join(project, "go"), { ...env, AGENT_BRIDGE_COMMAND: COMMAND });
    const { results, text } = outcomes(result.output);
    expect(result.status, text).toBe(0);
    expect([...results].sort()).toEqual([
      ["TestAFaultTouchesThisTestsSandboxOnly", "pass"],
      ["TestAnswersFromARecording", "pass"],
      ["TestCreatesTheBotsInstanceAndTalksToIt", "pass"],
    ]);
  }, 120_000);
});
