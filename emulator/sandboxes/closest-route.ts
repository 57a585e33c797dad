/**
 * The route of the table nearest to a request that matched none: the one
 * sharing the most path segments in place (a `{param}` matches any segment),
 * then the same method, so a typo or a wrong verb is named, not just refused.
 */
import { routes, type RouteSpec } from "../../shared/api.js";

const TABLE = (Object.entries(routes) as [string, RouteSpec][]).map(([id, spec]) => ({ id, spec, segments: spec.path.split("/").filter(Boolean) }));

const isParam = (segment: string) => segment.startsWith("{") && segment.endsWith("}");

/**
 * The operation id a request would reach (`createInstance`), found without
 * routing it: for a request answered before the router (an injected fault),
 * so the journal still says which route it was for. Literal segments beat
 * parameters (`skills/install` before `skills/{skill_name}`).
 */
export function routeOf(method: string, path: string): string | undefined {
  const segments = path.split("/").filter(Boolean);
  let best: { id: string; literals: number } | undefined;
  for (const { id, spec, segments: template } of TABLE) {
    if (spec.method !== method.toUpperCase() || template.length !== segments.length) continue;
    let literals = 0;
    const fits = template.every((t, i) => isParam(t) || (t === segments[i] && ++literals > 0));
    if (fits && (!best || literals > best.literals)) best = { id, literals };
  }
  return best?.id;
}

/** 0..1: how alike two path segments are (1 - edit distance / longer length). */
function likeness(a: string, b: string): number {
  if (a === b) return 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return 1 - previous[b.length]! / Math.max(a.length, b.length);
}

export function closestRoute(method: string, path: string): string | null {
  const segments = path.split("/").filter(Boolean);
  let best: { score: number; name: string } | undefined;
  for (const { spec, segments: template } of TABLE) {
    let score = 0;
    for (let i = 0; i < Math.min(segments.length, template.length); i++) {
      const t = template[i]!;
      score += isParam(t) ? 1 : likeness(t, segments[i]!);
    }
    // A segment more or less counts against; the same method breaks ties.
    score = score * 4 - Math.abs(segments.length - template.length) * 2 + (spec.method === method.toUpperCase() ? 1 : 0);
    if (score > 0 && (!best || score > best.score)) best = { score, name: `${spec.method} ${spec.path}` };
  }
  return best?.name ?? null;
}
