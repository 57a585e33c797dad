/**
 * Nesting bound for JSON the service accepts. A body nested thousands of
 * levels deep parses fine but breaks every recursive consumer later
 * (`JSON.stringify` of the whole state, `structuredClone`, the snapshot), so
 * it is refused at the door, and the check itself is a loop, never recursion.
 */

/** Deepest nesting accepted in a request body: `{}` and `[]` are depth 1. */
export const MAX_JSON_DEPTH = 32;

/** True when `value` nests deeper than `limit` objects/arrays; stops as soon as it knows. */
export function deeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}
