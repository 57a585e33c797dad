/** The run as a table for a terminal: one row per check, then the cleanup and the counts. */
import type { CleanupOutcome } from "../cleanup.js";
import { type CheckResult, redactSecrets } from "../runner.js";

const LABEL = { pass: "PASS", fail: "FAIL", skip: "SKIP" } as const;

const pad = (text: string, width: number) => text + " ".repeat(Math.max(0, width - text.length));

/** One line per check as it ends. */
export const progressLine = (r: CheckResult): string => `${LABEL[r.outcome]} ${r.id} (${r.ms} ms)${r.outcome === "pass" ? "" : `: ${r.message ?? ""}`}`;

export function formatTable(results: readonly CheckResult[], cleanup: readonly CleanupOutcome[]): string {
  const width = Math.max(5, ...results.map((r) => r.id.length));
  // A sweep runs no check: only its cleanup block.
  const lines = results.length ? [`${pad("CHECK", width)}  RESULT  ${pad("MS", 6)}  ROUTES / WHY`] : [];
  for (const r of results) {
    const note = r.outcome === "pass" ? r.routes.join(", ") : (r.message ?? "");
    lines.push(`${pad(r.id, width)}  ${pad(LABEL[r.outcome], 6)}  ${pad(String(r.ms), 6)}  ${note}`);
  }
  if (cleanup.length) {
    if (lines.length) lines.push("");
    lines.push("CLEANUP");
    for (const c of cleanup) lines.push(`  ${c.ok ? "done" : "LEFT"}  ${c.what}${c.ok ? "" : ` (after ${c.attempts} attempts: ${c.error})`}`);
  }
  const count = (o: CheckResult["outcome"]) => results.filter((r) => r.outcome === o).length;
  const incomplete = cleanup.some((c) => !c.ok) ? "cleanup incomplete" : "";
  lines.push(
    "",
    results.length
      ? `${count("pass")} passed, ${count("fail")} failed, ${count("skip")} skipped${incomplete && `; ${incomplete}`}`
      : incomplete || "nothing left",
  );
  return `${redactSecrets(lines.join("\n"))}\n`;
}
