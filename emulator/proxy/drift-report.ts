/**
 * The drift report: what the proxy saw depart from the contract, each
 * distinct departure once with how often it happened, counts per route, and
 * apart from drift the exchanges the upstream never answered (unreachable
 * is not drift). Written as JSON (read back by `DriftReport`), JUnit XML (a
 * CI shows each route as a test case, each drift as a failure) and a short
 * summary for people.
 */
import { z } from "zod";
import { Drift } from "../../shared/contract/drift.js";

export const DriftEntry = Drift.extend({ count: z.number().int().min(1) });
export type DriftEntry = z.infer<typeof DriftEntry>;

export const DriftReport = z.strictObject({
  upstream: z.string(),
  started_at: z.iso.datetime(),
  /** Exchanges checked, in all. */
  exchanges: z.number().int().min(0),
  /** Distinct drifts (entries of `drifts`). */
  drift_count: z.number().int().min(0),
  /** Per route (`METHOD /template`): exchanges checked and drifts seen (counted with repeats). */
  routes: z.record(z.string(), z.strictObject({ exchanges: z.number().int().min(0), drifts: z.number().int().min(0) })),
  drifts: z.array(DriftEntry),
  /** Requests the upstream did not answer (refused, reset, timed out): not drift. */
  unreachable: z.array(z.strictObject({ route: z.string(), error: z.string(), count: z.number().int().min(1) })),
});
export type DriftReport = z.infer<typeof DriftReport>;

/** The one owner of what a proxy run has seen. */
export class DriftCollector {
  /** Distinct drifts by identity (route, path, kind, expected, actual, side), in first-seen order. */
  readonly #drifts = new Map<string, DriftEntry>();
  /** Per route: exchanges and drifts (with repeats). */
  readonly #routes = new Map<string, { exchanges: number; drifts: number }>();
  /** Unreachable upstream, by route and error. */
  readonly #unreachable = new Map<string, { route: string; error: string; count: number }>();
  /** Exchanges checked in all. */
  #exchanges = 0;

  constructor(
    readonly upstream: string,
    readonly startedAt: string,
  ) {}

  /** One exchange on `route`, with what it drifted in (maybe nothing). */
  exchange(route: string, drifts: readonly Drift[]): void {
    this.#exchanges++;
    const counts = this.#routes.get(route) ?? { exchanges: 0, drifts: 0 };
    counts.exchanges++;
    counts.drifts += drifts.length;
    this.#routes.set(route, counts);
    for (const drift of drifts) {
      const key = JSON.stringify([drift.route, drift.jsonPath, drift.kind, drift.expected, drift.actual, drift.side ?? "response"]);
      const known = this.#drifts.get(key);
      if (known) known.count++;
      else this.#drifts.set(key, { ...drift, count: 1 });
    }
  }

  unreachable(route: string, error: string): void {
    const key = `${route}\n${error}`;
    const known = this.#unreachable.get(key);
    if (known) known.count++;
    else this.#unreachable.set(key, { route, error, count: 1 });
  }

  get driftCount(): number {
    return this.#drifts.size;
  }

  report(): DriftReport {
    return {
      upstream: this.upstream,
      started_at: this.startedAt,
      exchanges: this.#exchanges,
      drift_count: this.#drifts.size,
      routes: Object.fromEntries([...this.#routes].sort(([a], [b]) => a.localeCompare(b))),
      drifts: [...this.#drifts.values()],
      unreachable: [...this.#unreachable.values()],
    };
  }
}

const xml = (text: string): string =>
  text
    .replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!)
    .replace(/[^\t\n\r\x20-\uD7FF\uE000-\uFFFD]/gu, "");

const line = (d: Drift): string => `${d.side === "request" ? "request " : ""}${d.jsonPath}: ${d.kind}: expected ${d.expected}, got ${d.actual}`;

/** JUnit XML: one test case per route seen (and one for the unreachable upstream), a failure per distinct drift. */
export function junitOf(report: DriftReport): string {
  const cases: string[] = [];
  let failures = 0;
  for (const [route, counts] of Object.entries(report.routes)) {
    const drifts = report.drifts.filter((d) => d.route === route);
    failures += drifts.length ? 1 : 0;
    const body = drifts.length
      ? `\n      <failure message="${xml(`${drifts.length} drift(s) in ${counts.exchanges} exchange(s)`)}" type="drift">${xml(drifts.map((d) => `${line(d)} (x${d.count})`).join("\n"))}</failure>\n    `
      : "";
    cases.push(`    <testcase classname="contract" name="${xml(route)}">${body}</testcase>`);
  }
  const errors = report.unreachable.length ? 1 : 0;
  if (errors) {
    const text = report.unreachable.map((u) => `${u.route}: ${u.error} (x${u.count})`).join("\n");
    cases.push(
      `    <testcase classname="contract" name="upstream reachable">\n      <error message="upstream unreachable" type="unreachable">${xml(text)}</error>\n    </testcase>`,
    );
  }
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="contract drift" tests="${cases.length}" failures="${failures}" errors="${errors}">`,
    `  <testsuite name="contract drift against ${xml(report.upstream)}" tests="${cases.length}" failures="${failures}" errors="${errors}" timestamp="${report.started_at}">`,
    ...cases,
    "  </testsuite>",
    "</testsuites>",
    "",
  ].join("\n");
}

/** A few lines for a terminal: totals, then each drift under its route. */
export function summaryOf(report: DriftReport): string {
  const routes = Object.keys(report.routes).length;
  const lines = [`contract drift against ${report.upstream}: ${report.drift_count} drift(s) in ${report.exchanges} exchange(s) on ${routes} route(s)`];
  for (const [route, counts] of Object.entries(report.routes)) {
    const drifts = report.drifts.filter((d) => d.route === route);
    if (!drifts.length) continue;
    lines.push(`  ${route} (${counts.drifts} of ${counts.exchanges} exchange(s) drifted)`);
    for (const d of drifts) lines.push(`    ${line(d)}${d.count > 1 ? ` (x${d.count})` : ""}`);
  }
  for (const u of report.unreachable) lines.push(`  upstream unreachable: ${u.route}: ${u.error} (x${u.count})`);
  return `${lines.join("\n")}\n`;
}
