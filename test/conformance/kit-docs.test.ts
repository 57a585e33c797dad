/** docs/testing.md lists every check the kit runs, with the title the kit reports, so the page cannot fall behind. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CHECKS } from "../../conformance/checks/index.js";

const page = readFileSync(join(import.meta.dirname, "..", "..", "docs", "testing.md"), "utf8");

it.each(CHECKS.map((c) => [c.id, c.title] as const))("%s is documented", (id, title) => {
  expect(page).toContain(`| \`${id}\` | ${title} |`);
});

it("names each check once", () => {
  expect(new Set(CHECKS.map((c) => c.id)).size).toBe(CHECKS.length);
});
