/**
 * The one polling wait of the test suite, on vitest's `vi.waitFor`: re-checks a
 * condition (state the test cannot subscribe to, such as a list a fake fills or
 * a file another process writes) until it holds, and fails naming it.
 */
import { vi } from "vitest";

type Falsy = undefined | null | false;

/** Resolves with `check`'s first truthy value; rejects naming `what` after `timeoutMs`. */
export function waitUntil<T>(check: () => T | Falsy | Promise<T | Falsy>, what = "condition", timeoutMs = 10_000, intervalMs = 10): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: intervalMs },
  );
}
