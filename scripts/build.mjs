// `npm run build` (and `prepare`, so `npm ci` runs it; and the tests' globalSetup):
// - compile shared/, emulator/ and daemon/ to dist/ with tsc (incremental), for code that
//   imports the modules one by one;
// - bundle the `agent-bridge` command into dist/bin/agent-bridge.cjs with esbuild: our code and
//   the libraries on its start-up path (express, zod, undici, ...). Loading ~600 module files
//   one by one was most of a start (an emulator child process: ~0.65 s of CPU before, ~0.35 s
//   bundled). Libraries that load files by path at run time (pino's workers) or only when a
//   platform is enabled (grammY, discord.js, Baileys, the Slack SDK, pg) stay outside, loaded
//   from node_modules. One CommonJS file, so that the launcher (bin/launch.ts, built to
//   dist/bin/agent-bridge.js) can run it with V8's code cache: ~0.23 s instead of ~0.41 s;
// - make the binary executable and copy the web console's static files (neither is
//   compiled) beside the code that serves them.
//
// `--if-changed` (the tests' globalSetup) skips all of it when nothing it reads changed since
// the last build started: even with nothing to do, tsc takes ~2 s of CPU to load the program.
// `prepare` uses it too, so `npm ci --omit=dev` in a checkout built before installs without
// the build tools; where a build is due and they are missing, it says how to install for
// production instead (the packed tarball: scripts/pack-production.mjs).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
// Stamped with the time the last successful build started, so a file saved during a build counts as changed.
const STAMP = join(root, "dist", ".build-started");
const INPUTS = [
  "index.ts",
  "shared",
  "emulator",
  "conformance",
  "daemon",
  "testing",
  "bin",
  "tsconfig.json",
  "tsconfig.build.json",
  "package.json",
  "package-lock.json",
  "scripts/build.mjs",
];

/** Newest mtime of a file or a tree. Directories count too: deleting or renaming a file changes its directory's. */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return Number.POSITIVE_INFINITY; // an input that is gone: build, and let tsc say why
  let time = stat.mtimeMs;
  if (stat.isDirectory()) for (const name of readdirSync(path)) time = Math.max(time, newest(join(path, name)));
  return time;
}

const stamp = statSync(STAMP, { throwIfNoEntry: false });
if (process.argv.includes("--if-changed") && stamp && INPUTS.every((input) => newest(join(root, input)) < stamp.mtimeMs)) process.exit(0);

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc) || !existsSync(join(root, "node_modules", "esbuild"))) {
  process.stderr.write(
    [
      "agent-bridge: the build needs the development dependencies (typescript, esbuild), and this install left them out (--omit=dev).",
      "  For a production install, build once and install the package npm would publish:",
      "    npm ci && node scripts/pack-production.mjs OUT && (cd OUT && npm install --omit=dev --ignore-scripts)",
      "  or, in this checkout: npm ci && npm prune --omit=dev (dist/ stays).",
      "",
    ].join("\n"),
  );
  process.exit(1);
}
const { build, transform } = await import("esbuild");

const started = new Date();
rmSync(STAMP, { force: true });
const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (result.status !== 0) process.exit(result.status ?? 1);

const binDir = join(root, "dist", "bin");
rmSync(binDir, { recursive: true, force: true });
// Every platform library is an optional peer dependency (package.json): loaded from node_modules
// when a channel needs it, never bundled. A bundled copy would run instead of the version the
// person installed, and every start read it: with the newer platforms' libraries inside, the
// bundle was 20 MB instead of 5.6 MB, and a Telegram daemon's start cost 0.6 s of CPU instead of 0.4 s.
// Their families (`@scope/*`) too, for the packages of a scope our code imports beside the peer.
const peers = Object.keys(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).peerDependencies ?? {});
const external = [
  ...peers,
  ...new Set(peers.filter((name) => name.startsWith("@")).map((name) => `${name.split("/")[0]}/*`)),
  "@grammyjs/*",
  "@discordjs/*",
  "@matrix-org/*",
  "pino",
  "pino-pretty",
  "qrcode-terminal",
  "playwright-core",
  // Its "main" is a UMD build that requires its own files by relative path.
  "jsonc-parser",
];
// The command's code as one CommonJS file, run by the launcher with V8's code cache
// (bin/launch.ts says why). Each subcommand's modules still initialise only when it runs:
// esbuild keeps what `import()` loaded behind a function called at that point.
const bundling = { bundle: true, platform: "node", target: "node20", logLevel: "warning" };
await build({
  ...bundling,
  entryPoints: [join(root, "bin", "agent-bridge.ts")],
  outfile: join(binDir, "agent-bridge.cjs"),
  format: "cjs",
  sourcemap: true,
  // The libraries' licence comments, as they wrote them, beside the bundle (agent-bridge.cjs.LEGAL.txt).
  legalComments: "external",
  external,
  // `import()` of a library becomes `require()` (Node 20.19 requires ES modules too): V8 drops
  // what a dynamic import needs from code it loads from a cache, so none may stay.
  supported: { "dynamic-import": false },
  // The modules find the files they serve beside themselves: beside the bundle.
  define: { "import.meta.url": "__agentBridgeUrl", "import.meta.dirname": "__dirname", "import.meta.filename": "__filename" },
  // Strict, as the ES modules it is made of were: the directive must come before any statement.
  banner: { js: '"use strict";\nconst __agentBridgeUrl = require("node:url").pathToFileURL(__filename).href;' },
});
const bundled = await asciiOnly(readFileSync(join(binDir, "agent-bridge.cjs"), "utf8"));
writeFileSync(join(binDir, "agent-bridge.cjs"), bundled);
if (!/^(#!.*\n)?"use strict";\n/.test(bundled)) throw new Error("dist/bin/agent-bridge.cjs does not start strict");
// The launcher: what `agent-bridge` runs (package.json "bin"), told the bundle's hash (its caches' key).
await build({
  ...bundling,
  entryPoints: [join(root, "bin", "launch.ts")],
  outfile: join(binDir, "agent-bridge.js"),
  format: "esm",
  banner: { js: "#!/usr/bin/env node" },
  define: { AGENT_BRIDGE_BUNDLE_HASH: JSON.stringify(createHash("sha256").update(bundled).digest("hex").slice(0, 16)) },
});
chmodSync(join(binDir, "agent-bridge.js"), 0o755);

const ui = join("emulator", "console", "ui");
// The compiled routes and the bundle each serve the files from beside themselves.
for (const target of [join(root, "dist", ui), join(binDir, "ui")]) {
  rmSync(target, { recursive: true, force: true });
  cpSync(join(root, ui), target, { recursive: true });
}
const opsUi = join("daemon", "ops", "console", "ops-ui");
for (const target of [join(root, "dist", opsUi), join(binDir, "ops-ui")]) {
  rmSync(target, { recursive: true, force: true });
  cpSync(join(root, opsUi), target, { recursive: true });
}
// Both consoles' shared browser files, beside shared/web-console.js and beside the bundle.
const sharedUi = join("shared", "web-console-ui");
for (const target of [join(root, "dist", sharedUi), join(binDir, "web-console-ui")]) {
  rmSync(target, { recursive: true, force: true });
  cpSync(join(root, sharedUi), target, { recursive: true });
}
writeFileSync(STAMP, "");
utimesSync(STAMP, started, started);

/**
 * The bundle with every character outside ASCII replaced by "?", one per UTF-16 unit (the
 * source map's columns stay right). esbuild escapes them in code (its default charset) but keeps
 * the comments it copies from libraries (undici's "request’s", zod's locales): one such
 * character makes the whole 5 MB a two-byte string, which took the launcher ~30 ms to decode
 * and V8 ~20 ms more to check against its cache, on every start. Checked: without comments or
 * whitespace (esbuild's minifier), the code before and after is the same.
 */
async function asciiOnly(code) {
  const ascii = code.replace(/[^\x00-\x7f]/g, "?");
  if (ascii === code) return code;
  const stripped = async (text) => (await transform(text, { minifyWhitespace: true, loader: "js", charset: "utf8" })).code;
  if ((await stripped(ascii)) !== (await stripped(code)))
    throw new Error("dist/bin/agent-bridge.cjs has characters outside ASCII in its code, not only in comments");
  return ascii;
}
