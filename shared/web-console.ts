/**
 * What both web consoles (the emulator's and the daemon's operator console)
 * serve the same way: Preact and htm from node_modules by path (no CDN, no
 * build step), and the headers that hold every page to its own scripts.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

/**
 * The browser files both consoles serve alike (the stylesheet, the shared
 * helpers), each under its own `.../ui/shared/`. Beside this module: the build
 * copies them next to the compiled module and next to the bundled command.
 */
export const CONSOLE_SHARED_DIR = join(dirname(fileURLToPath(import.meta.url)), "web-console-ui");

/** Vendor modules by file name, their bare `preact` imports pointed at our copy (`./preact.mjs` beside them). */
export function vendorModules(): Map<string, string> {
  const read = (path: string) => readFileSync(path, "utf8").replace(/(from\s*|import\s*)(["'])preact\2/g, "$1$2./preact.mjs$2");
  // htm's CommonJS entry sits beside its ES module build.
  const htmDir = dirname(require.resolve("htm"));
  return new Map([
    ["preact.mjs", read(require.resolve("preact"))],
    ["hooks.mjs", read(require.resolve("preact/hooks"))],
    ["htm.mjs", read(join(htmDir, "htm.mjs"))],
  ]);
}

/** Own scripts, styles and connections only; no inline code, no framing, Trusted Types on. */
export const CONSOLE_SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'; require-trusted-types-for 'script'; trusted-types 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
} as const;
