import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
const dataDir = mkdtempSync(join(tmpdir(), "bridge-start-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/**
 * What `npm start` runs (its script, checked below), with `input` piped to stdin (then closed);
 * resolves when it exits. Run without npm in between: npm itself costs a second per start.
 */
function npmStart(input: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, "dist", "bin", "agent-bridge.js"), "start", "--data-dir", dataDir], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"],
      // A start that hangs is killed (and fails the test on its exit code) before vitest's timeout.
      timeout: 25_000,
      killSignal: "SIGKILL",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(input);
  });
}

const field = (banner: string, name: string) => new RegExp(`^\\s*${name}\\s+(\\S+)\\s+\\((\\w+)`, "m").exec(banner)?.slice(1, 3);

describe("npm start", () => {
  it("is the compiled agent-bridge start", () => {
    expect(pkg.scripts.start).toBe("node dist/bin/agent-bridge.js start");
  });

  it("answers a line typed on stdin, then reuses the same organization and instance on a second start", async () => {
    const first = await npmStart("hello\n");
    expect(first, first.stderr).toMatchObject({ code: 0, signal: null });
    expect(first.stdout).toContain("agent> You said: hello");
    const [org1, orgState1] = field(first.stdout, "org") ?? [];
    const [inst1, instState1] = field(first.stdout, "instance") ?? [];
    expect([orgState1, instState1]).toEqual(["new", "new"]);
    expect(first.stdout).toMatch(new RegExp(`emulator\\s+http://127\\.0\\.0\\.1:\\d+/_emulator/ui/instances/${inst1}\\s`));
    // The operator's console is printed beside the ops endpoints.
    const consoleUrl = /^\s*console\s+(http:\/\/127\.0\.0\.1:\d+\/ui\/)\s/m.exec(first.stdout)?.[1];
    expect(consoleUrl, first.stdout).toBeDefined();
    expect(first.stdout).toMatch(/^\s*ops\s+http:\/\/127\.0\.0\.1:\d+\/healthz\s/m);

    const credsFile = join(dataDir, "credentials.json");
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
    const creds = JSON.parse(readFileSync(credsFile, "utf8")) as { organizationId: string; instanceId: string; orgKey: string; scopedKey: string };
    expect([creds.organizationId, creds.instanceId]).toEqual([org1, inst1]);

    const second = await npmStart("!recall\n");
    expect(second, second.stderr).toMatchObject({ code: 0, signal: null });
    expect(field(second.stdout, "org")).toEqual([org1, "reused"]);
    expect(field(second.stdout, "instance")).toEqual([inst1, "reused"]);
    // Same conversation as before the restart.
    expect(second.stdout).toContain("agent> hello");

    for (const run of [first, second]) {
      for (const secret of [creds.orgKey, creds.scopedKey]) {
        expect(run.stdout).not.toContain(secret);
        expect(run.stderr).not.toContain(secret);
      }
    }
  });
});
