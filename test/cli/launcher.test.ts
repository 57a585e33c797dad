/**
 * The installed command's launcher (bin/launch.ts): the bundle runs with V8's code cache, one
 * file per subcommand, written by the first successful run of a build in a folder of this
 * user's alone; a cache V8 refuses is written again; a folder others may write to, or a link,
 * is neither read nor written; `off` keeps nothing. Every run answers the same either way.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { beforeEach, expect, it, onTestFinished } from "vitest";
import { BIN, runAgentBridge } from "../helpers/cli.js";

const VERSION = (JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8")) as { version: string }).version;

let root: string;
beforeEach(() => {
  const dir = mkdtempSync(join(tmpdir(), "launcher-test-"));
  root = dir;
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
});

async function version(cache: string): Promise<string> {
  const cli = runAgentBridge(["--version"], { env: { ...process.env, AGENT_BRIDGE_COMPILE_CACHE: cache } });
  expect(await cli.exited).toBe(0);
  return cli.stdout();
}
const caches = (folder: string) => (existsSync(folder) ? readdirSync(folder).filter((name) => name.endsWith(".bin")) : []);

it("writes a cache on the first run, to a folder of this user's alone, and runs the same from it", async () => {
  const folder = join(root, "cache");
  expect(await version(folder)).toBe(`${VERSION}\n`);
  const [written, ...more] = caches(folder);
  expect(more).toEqual([]);
  expect(written).toMatch(/-other\.bin$/);
  expect(statSync(folder).mode & 0o777).toBe(0o700);
  expect(statSync(join(folder, written!)).mode & 0o777).toBe(0o600);
  const first = readFileSync(join(folder, written!));
  expect(await version(folder)).toBe(`${VERSION}\n`);
  // Loaded, so not written again.
  expect(readFileSync(join(folder, written!)).equals(first)).toBe(true);

  const cli = runAgentBridge(["config", "schema"], { env: { ...process.env, AGENT_BRIDGE_COMPILE_CACHE: folder } });
  expect(await cli.exited).toBe(0);
  const now = caches(folder);
  expect(now).toHaveLength(2);
  expect(now).toContain(written);
  expect(now.find((name) => name !== written)).toMatch(/-config\.bin$/);
});

it("runs from a cache V8 refuses and writes it again; keeps the 16 newest files", async () => {
  const folder = join(root, "cache");
  await version(folder);
  const [written] = caches(folder);
  writeFileSync(join(folder, written!), Buffer.from("not a code cache"));
  const old = Array.from({ length: 20 }, (_, i) => `older-build-${String(i).padStart(2, "0")}-other.bin`);
  for (const [i, name] of old.entries()) {
    writeFileSync(join(folder, name), "older build");
    utimesSync(join(folder, name), 1_000 + i, 1_000 + i);
  }
  expect(await version(folder)).toBe(`${VERSION}\n`);
  expect(readFileSync(join(folder, written!)).length).toBeGreaterThan(1000);
  // Ours (the newest) and the 15 newest of the others.
  expect(caches(folder).sort()).toEqual([written!, ...old.slice(5)].sort());
});

it("writes nothing from a usage error or a subcommand's help: they compiled little of it", async () => {
  const folder = join(root, "cache");
  const env = { ...process.env, AGENT_BRIDGE_COMPILE_CACHE: folder };
  const usage = runAgentBridge(["run"], { env });
  expect(await usage.exited).toBe(2);
  const help = runAgentBridge(["emulator", "--help"], { env });
  expect(await help.exited).toBe(0);
  expect(caches(folder)).toEqual([]);
});

it("neither reads nor writes a folder others may write to or a link, and keeps nothing with off", async () => {
  const shared = join(root, "shared");
  mkdirSync(shared);
  chmodSync(shared, 0o777);
  writeFileSync(join(shared, "planted.bin"), "planted");
  expect(await version(shared)).toBe(`${VERSION}\n`);
  expect(caches(shared)).toEqual(["planted.bin"]);
  const real = join(root, "real");
  mkdirSync(real, { mode: 0o700 });
  const link = join(root, "link");
  symlinkSync(real, link);
  expect(await version(link)).toBe(`${VERSION}\n`);
  expect(caches(real)).toEqual([]);
  rmSync(link);
  rmSync(real, { recursive: true });

  const off = runAgentBridge(["--version"], { env: { ...process.env, AGENT_BRIDGE_COMPILE_CACHE: "off", TMPDIR: root } });
  expect(await off.exited).toBe(0);
  expect(off.stdout()).toBe(`${VERSION}\n`);
  expect(readdirSync(root).sort()).toEqual(["shared"]);
});

it("loads a library the code imports on demand from a cached run too (V8 keeps no dynamic import in cached code)", async () => {
  const folder = join(root, "cache");
  const config = join(root, "config.json");
  // Port 9 (discard) refuses: the check gets as far as connecting, so `pg` loaded.
  writeFileSync(
    config,
    JSON.stringify({
      service: { baseUrl: "http://127.0.0.1:9", apiKey: "svc_sk_0123456789abcdef0123456789" },
      state: { kind: "postgres", url: "postgres://postgres@127.0.0.1:9/x" },
      channels: [],
    }),
  );
  for (const run of ["first, compiling", "second, from the cache"]) {
    const cli = runAgentBridge(["check", "--config", config], { env: { ...process.env, AGENT_BRIDGE_COMPILE_CACHE: folder } });
    await cli.exited;
    expect(cli.stdout(), run).toMatch(/FAIL +database postgres:\/\/postgres@127\.0\.0\.1:9\/x: cannot connect/);
  }
  expect(caches(folder)).toEqual([expect.stringMatching(/-check\.bin$/)]);
});

it("runs a bundle of ASCII alone (read as one-byte text), the libraries' licence comments kept whole beside it", () => {
  const bin = dirname(BIN);
  const bundle = readFileSync(join(bin, "agent-bridge.cjs"));
  expect(bundle.findIndex((byte) => byte > 0x7f)).toBe(-1);
  // What the build replaced by "?" in comments was not licence text: that is in its own file, as written.
  expect(readFileSync(join(bin, "agent-bridge.cjs.LEGAL.txt"), "utf8")).toMatch(/MIT License/);
});
