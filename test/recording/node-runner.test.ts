/**
 * `useRecording` on node:test: the runner Node has built in, as a child
 * process, against an emulator replaying a recording made for it.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { createEmulator } from "../../emulator/index.js";
import { emptyRecording, recordingFileName, recordingText } from "../../emulator/recording/format.js";
import { tempDir } from "../helpers/emulator.js";

const dir = tempDir();
afterAll(() => dir.remove());

it("replays the recording named by useRecording under node --test", async () => {
  writeFileSync(
    join(dir.path, recordingFileName("node-flow")),
    recordingText({
      ...emptyRecording("node-flow"),
      interactions: [
        {
          request: { method: "GET", path: "/v1/organization" },
          response: { status: 200, headers: { "content-type": "application/json" }, body: { name: "from the recording" } },
        },
      ],
    }),
  );
  const emulator = await createEmulator({ replay: { dir: dir.path, mode: "strict" } });
  try {
    const url = await emulator.listen(0, "127.0.0.1");
    const root = join(import.meta.dirname, "../..");
    const child = spawn(process.execPath, ["--import", "tsx", "--test", join(import.meta.dirname, "fixtures", "node-test-recording.ts")], {
      cwd: root,
      env: { ...process.env, AGENT_BRIDGE_URL: url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(output).toContain("# pass 1");
    expect(code).toBe(0);
    const usage = emulator.replay!.usage();
    expect(usage).toEqual([expect.objectContaining({ name: "node-flow", used: 1, unused: [] })]);
  } finally {
    await emulator.close();
  }
});
