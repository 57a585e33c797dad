/**
 * The run as JUnit XML, the form CI systems show: one testcase per check
 * (classname its area), a failure with the message and each drift, and the
 * cleanup as a testcase of its own, so a leftover fails the build visibly.
 */
import type { CleanupOutcome } from "../cleanup.js";
import { type CheckResult, redactSecrets } from "../runner.js";

const xml = (text: string): string =>
  redactSecrets(text)
    // XML 1.0 cannot carry most control characters, even escaped.
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");

const seconds = (ms: number) => (ms / 1000).toFixed(3);

function testcase(r: CheckResult): string {
  const area = r.id.split(".")[0] ?? r.id;
  const open = `    <testcase classname="conformance.${xml(area)}" name="${xml(`${r.id}: ${r.title}`)}" time="${seconds(r.ms)}"`;
  if (r.outcome === "pass") return `${open}/>`;
  if (r.outcome === "skip") return `${open}>\n      <skipped message="${xml(r.message ?? "")}"/>\n    </testcase>`;
  const drift = r.drift.map((d) => `${d.route} ${d.status} ${d.jsonPath} (${d.kind}): expected ${d.expected}, got ${d.actual}`).join("\n");
  const body = [`Routes: ${r.routes.join(", ")}`, drift].filter(Boolean).join("\n");
  return `${open}>\n      <failure message="${xml(r.message ?? "failed")}" type="${r.drift.length ? "drift" : "check"}">${xml(body)}</failure>\n    </testcase>`;
}

export function formatJunit(results: readonly CheckResult[], cleanup: readonly CleanupOutcome[], meta: { baseUrl: string; timestamp: string }): string {
  const left = cleanup.filter((c) => !c.ok);
  const cleanupCase = [
    `    <testcase classname="conformance.cleanup" name="cleanup: everything the run created is removed" time="0">`,
    ...(left.length
      ? [
          `      <failure message="${xml(`left behind: ${left.map((c) => c.what).join("; ")}`)}" type="cleanup">${xml(left.map((c) => `${c.what}: ${c.error}`).join("\n"))}</failure>`,
        ]
      : []),
    "    </testcase>",
  ].join("\n");
  const failures = results.filter((r) => r.outcome === "fail").length + (left.length ? 1 : 0);
  const skipped = results.filter((r) => r.outcome === "skip").length;
  const time = seconds(results.reduce((sum, r) => sum + r.ms, 0));
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="agent-bridge conformance" tests="${results.length + 1}" failures="${failures}" skipped="${skipped}" time="${time}">`,
    `  <testsuite name="conformance ${xml(meta.baseUrl)}" tests="${results.length + 1}" failures="${failures}" errors="0" skipped="${skipped}" time="${time}" timestamp="${xml(meta.timestamp)}">`,
    ...results.map(testcase),
    cleanupCase,
    "  </testsuite>",
    "</testsuites>",
    "",
  ].join("\n");
}
