// `node scripts/pack-production.mjs OUT`: the production install's inputs, in OUT, from a
// built checkout (dist/ present: `npm ci` builds it):
// - agent-bridge-<version>.tgz, `npm pack` of this repository: what npm would publish, so
//   installing it needs no build and no dev dependency;
// - package.json naming that tarball and the platform libraries a daemon loads when a channel
//   needs one (the optional peer dependencies: grammY, discord.js, Baileys, pg), each at the
//   version this repository's lock file tested.
// Then `npm install --omit=dev` in OUT is the install. The Dockerfile's build stage runs this
// script and its final stage that install; test/package/image.test.ts runs both the same way.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = join(import.meta.dirname, "..");
const out = process.argv[2];
if (!out) {
  process.stderr.write("usage: node scripts/pack-production.mjs OUT_DIR\n");
  process.exit(2);
}
const dest = resolve(out);
mkdirSync(dest, { recursive: true });

const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
if (!readFileSafe(join(root, "dist", "bin", "agent-bridge.js")))
  throw new Error("dist/ is not built: run `npm ci` (its prepare script builds) or `npm run build` first");

// `--ignore-scripts`: dist/ is built already; `prepare` would build it again.
const tarball = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dest], { cwd: root, encoding: "utf8" })
  .trim()
  .split("\n")
  .at(-1);

const platforms = Object.fromEntries(
  Object.keys(pkg.peerDependencies ?? {})
    .filter((name) => name !== "vitest") // the test helpers' runner, not something a daemon loads
    .map((name) => {
      const locked = lock.packages?.[`node_modules/${name}`]?.version;
      if (!locked) throw new Error(`${name} is not in package-lock.json`);
      return [name, locked];
    }),
);
writeFileSync(
  join(dest, "package.json"),
  `${JSON.stringify({ name: "agent-bridge-production", private: true, dependencies: { [pkg.name]: `file:./${tarball}`, ...platforms } }, null, 2)}\n`,
);
process.stdout.write(`${join(dest, tarball)}\n`);

function readFileSafe(path) {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}
