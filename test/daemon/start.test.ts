import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const dataDir = mkdtempSync(join(tmpdir(), "bridge-start-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** `npm start` with `input` piped to stdin (then closed); resolves when it exits. */
function npmStart(input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["start", "--silent", "--", "--data-dir", dataDir], { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`npm start did not finish\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

const field = (banner: string, name: string) => new RegExp(`^\\s*${name}\\s+(\\S+)\\s+\\((\\w+)`, "m").exec(banner)?.slice(1, 3);

describe("npm start", () => {
  it("answers a line typed on stdin, then reuses the same organization and instance on a second start", async () => {
    const first = await npmStart("hello\n");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("agent> You said: hello");
    const [org1, orgState1] = field(first.stdout, "org") ?? [];
    const [inst1, instState1] = field(first.stdout, "instance") ?? [];
    expect([orgState1, instState1]).toEqual(["new", "new"]);
    expect(first.stdout).toMatch(new RegExp(`console\\s+http://127\\.0\\.0\\.1:\\d+/_emulator/ui/instances/${inst1}\\s`));

    const credsFile = join(dataDir, "credentials.json");
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
    const creds = JSON.parse(readFileSync(credsFile, "utf8")) as { organizationId: string; instanceId: string; orgKey: string; scopedKey: string };
    expect([creds.organizationId, creds.instanceId]).toEqual([org1, inst1]);

    const second = await npmStart("!recall\n");
    expect(second.code).toBe(0);
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
