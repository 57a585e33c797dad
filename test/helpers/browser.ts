/**
 * Real Chromium (the Debian `chromium` package) driven by playwright-core: no
 * browser download. One launch per test file; a fresh profile each time.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Locator } from "playwright-core";
import { chromiumPath } from "./system-programs.js";

/** Found as `lacks("chromium")` finds it: `CHROMIUM_PATH`, else `chromium` on `PATH`. */
export const CHROMIUM = chromiumPath();

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<TestBrowser> {
  if (CHROMIUM === undefined) throw new Error("Chromium is missing: bash scripts/install-system-programs.sh chromium (.ci/run does it)");
  const profile = mkdtempSync(join(tmpdir(), "agent-bridge-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Polling for page assertions (playwright-core ships no `expect`): checks often, gives up after 10 s. */
export const UNTIL = { timeout: 10_000, interval: 25 };

/** Text of the first match, or "" while there is none (for `expect.poll`). */
export const textOf = (locator: Locator): Promise<string> =>
  locator
    .first()
    .innerText({ timeout: 1_000 })
    .catch(() => "");
