/**
 * Each platform's library loads only when a channel of it is enabled: the
 * registry and the descriptors are light, and `create` imports the adapter.
 * A real node process runs the compiled buildAdapters with a module resolve
 * hook that reports every platform library (every peer dependency) it is asked for.
 * And the `agent-bridge` command's bundle holds none of them: they load from
 * node_modules, the version the person installed.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

const ROOT = join(import.meta.dirname, "..", "..");
const dist = (path: string) => pathToFileURL(join(ROOT, "dist", path)).href;
/** The platform libraries: package.json's peer dependencies but vitest (the test helpers' runner). */
const PEERS = Object.keys(
  z.object({ peerDependencies: z.record(z.string(), z.string()) }).parse(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))).peerDependencies,
).filter((name) => name !== "vitest");
const LIBRARIES = new RegExp(`^(${PEERS.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|")})(\\/|$)`);

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-loading-"));
  await writeFile(
    join(dir, "hooks.mjs"),
    `export async function resolve(spec, ctx, next) {
  const library = ${LIBRARIES}.exec(spec)?.[1];
  if (library) process.stderr.write("LOADED " + library + "\\n");
  return next(spec, ctx);
}
`,
  );
  await writeFile(join(dir, "register.mjs"), `import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n`);
  await writeFile(
    join(dir, "build.mjs"),
    `import { PassThrough } from "node:stream";
const { buildAdapters } = await import(${JSON.stringify(dist("daemon/adapters/index.js"))});
const { daemonConfigSchema } = await import(${JSON.stringify(dist("daemon/config/schema.js"))});
const { createLogger } = await import(${JSON.stringify(dist("daemon/ops/logger.js"))});
const config = daemonConfigSchema.parse({ service: { apiKey: "svc_org_loading" }, dataDir: process.argv[3], channels: JSON.parse(process.argv[2]) });
const adapters = await buildAdapters(config, {
  logger: createLogger({ level: "silent" }),
  clock: { now: () => Date.now() },
  stateFor: () => ({ get: () => undefined, set: async () => undefined }),
  stdin: new PassThrough(),
  stdout: new PassThrough(),
});
process.stdout.write(JSON.stringify(adapters.map((a) => a.platform)));
`,
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Builds (never starts) the adapters of `channels` in a fresh process: which platforms were built, which libraries were resolved. */
async function build(channels: unknown[]): Promise<{ built: string[]; loaded: string[] }> {
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    ["--import", join(dir, "register.mjs"), join(dir, "build.mjs"), JSON.stringify(channels), join(dir, "data")],
    { cwd: ROOT },
  );
  const loaded = [...new Set(stderr.split("\n").flatMap((line) => (line.startsWith("LOADED ") ? [line.slice("LOADED ".length)] : [])))];
  return { built: JSON.parse(stdout) as string[], loaded: loaded.sort() };
}

describe("platform libraries load lazily", () => {
  it("a terminal-only daemon (other channels disabled) loads no grammY, discord.js or Baileys", async () => {
    const result = await build([
      { type: "terminal" },
      { type: "telegram", token: `123456:${"A".repeat(35)}`, enabled: false },
      { type: "discord", token: "discord-token", enabled: false },
      { type: "whatsapp", enabled: false },
    ]);
    expect(result).toEqual({ built: ["terminal"], loaded: [] });
  });

  it("an enabled channel loads its own platform's library, and only that one", async () => {
    const result = await build([{ type: "discord", token: "discord-token" }]);
    expect(result).toEqual({ built: ["discord"], loaded: ["discord.js"] });
  });
});

describe("the command's bundle", () => {
  it("holds no platform library: each loads from node_modules when a channel needs it", () => {
    const bundle = readFileSync(join(ROOT, "dist", "bin", "agent-bridge.cjs"), "latin1");
    // esbuild names each bundled module's file in a comment line: `// node_modules/<package>/<file>`.
    const bundled = new Set([...bundle.matchAll(/^\/\/ node_modules\/((?:@[^/\s]+\/)?[^/\s]+)\//gm)].map((m) => m[1]!));
    expect(bundled.size).toBeGreaterThan(5); // the libraries it does bundle (express, zod, undici...) are named this way
    expect(PEERS.filter((name) => bundled.has(name))).toEqual([]);
  });
});
