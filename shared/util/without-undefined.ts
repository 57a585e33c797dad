/** `fields` with each property that is `undefined` left out: what an optional property takes (`exactOptionalPropertyTypes`). */
export type WithoutUndefined<T> = { [K in keyof T]?: NonNullable<T[K]> | (T[K] & null) };

/**
 * Copies a plain object literal without its `undefined` properties, so a value
 * that may be absent can be spread into options whose property is optional:
 * `{ ...withoutUndefined({ dataDir, seed }) }` leaves out the ones not given
 * rather than passing them as `undefined`.
 */
export function withoutUndefined<T extends object>(fields: T): WithoutUndefined<T> {
  const out: WithoutUndefined<T> = {};
  for (const key in fields) {
    const value = fields[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
