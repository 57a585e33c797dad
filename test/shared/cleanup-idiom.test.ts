/**
 * The suite's one cleanup idiom: what a test makes is closed when that test
 * finishes (`onTestFinished`, or `forThisTest(resource)` from
 * test/helpers/for-this-test.ts); what a whole file shares is made in
 * `beforeAll`, which returns its release. An `afterEach` that closes what a
 * test made, or a hand-rolled list of things to clean emptied in an after
 * hook, is the other idiom this test keeps out.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** The argument text of each call to `hook(` in `source` (brackets matched, strings not parsed: the test files keep it simple). */
export function hookBodies(source: string, hook: string): string[] {
  const bodies: string[] = [];
  let at = source.indexOf(`${hook}(`);
  while (at >= 0) {
    const open = at + hook.length;
    let depth = 0;
    let end = open;
    for (; end < source.length; end++) {
      if (source[end] === "(") depth++;
      else if (source[end] === ")" && --depth === 0) break;
    }
    bodies.push(source.slice(open + 1, end));
    at = source.indexOf(`${hook}(`, end);
  }
  return bodies;
}

/** What cleans up a resource: closing, stopping, removing, abandoning, or emptying a list of such. */
const CLEANS = /\.(close|stop|abandon|end|remove|terminate)\(|rmSync\(|\.splice\(0\)/;

it("the hook reader finds each hook's whole body", () => {
  const source = "afterEach(async () => {\n  await t?.close();\n});\nit('x', () => {});\nafterEach(() => rmSync(root, { force: true }));";
  expect(hookBodies(source, "afterEach")).toEqual(["async () => {\n  await t?.close();\n}", "() => rmSync(root, { force: true })"]);
  expect(hookBodies(source, "afterEach").every((b) => CLEANS.test(b))).toBe(true);
});

it("no test file cleans up in an afterEach, or empties a cleanup list in an after hook", () => {
  const offenders = testFiles(root)
    .filter((file) => file !== import.meta.filename)
    .flatMap((file) => {
      const source = readFileSync(file, "utf8");
      const perTest = hookBodies(source, "afterEach").filter((body) => CLEANS.test(body));
      const lists = hookBodies(source, "afterAll").filter((body) => /\.splice\(0\)/.test(body));
      return [...perTest, ...lists].map((body) => `${relative(root, file)}: ${body.trim().split("\n")[0]}`);
    });
  expect(offenders, "use onTestFinished / forThisTest (test/helpers/for-this-test.ts), or a beforeAll that returns its release").toEqual([]);
});
