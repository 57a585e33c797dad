/** docs/testing.md lists every check the kit runs (with the title the kit reports) and every option, so the page cannot fall behind. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createProgram } from "../../bin/program.js";
import { CHECKS } from "../../conformance/checks/index.js";

const page = readFileSync(join(import.meta.dirname, "..", "..", "docs", "testing.md"), "utf8");

it.each(CHECKS.map((c) => [c.id, c.title] as const))("%s is documented", (id, title) => {
  expect(page).toContain(`| \`${id}\` | ${title} |`);
});

it("names each check once", () => {
  expect(new Set(CHECKS.map((c) => c.id)).size).toBe(CHECKS.length);
});

it("documents every option of the command", () => {
  // The options as the command parser knows them (bin/program.ts), so a new one cannot hide.
  const command = createProgram(() => {}).commands.find((c) => c.name() === "conformance")!;
  const flags = command.options.map((o) => o.long!).filter((f) => f !== "--version" && f !== "--help");
  expect(flags).toContain("--sweep");
  for (const flag of flags) expect(page, flag).toContain(`| \`${flag}`);
});
