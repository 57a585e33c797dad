// Bounded windows: a console left open for hours under a steady load keeps a
// fixed number of rows, whatever arrives. Pure functions, tested in node.

/** Rows kept by the request log and by a conversation (overridable with `?window=N`). */
export const REQUEST_WINDOW = 500;
export const TURN_WINDOW = 200;

/**
 * `list` followed by the `items` it does not hold yet (same `key`), cut to the
 * newest `max`. Returns a new array; `list` is not changed.
 */
export function appendWindow(list, items, max, key = (item) => item.id) {
  if (!(max >= 1)) throw new RangeError("max must be at least 1");
  const seen = new Set(list.map(key));
  const fresh = items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  const joined = fresh.length ? list.concat(fresh) : list;
  return joined.length > max ? joined.slice(joined.length - max) : joined;
}

/** The window size for this page: `?window=N` (1..100000) or the default. */
export function windowSize(search, fallback) {
  const n = Number(new URLSearchParams(search).get("window"));
  return Number.isInteger(n) && n >= 1 && n <= 100000 ? n : fallback;
}
