/**
 * A `Map` that forgets its least recently set keys beyond `max`, so per-chat or per-message
 * bookkeeping cannot grow without bound. Setting a key again makes it the newest; reading does not.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly #max: number;

  /** @param max entries kept at most (at least 1). */
  constructor(max: number) {
    super();
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`BoundedMap: max must be a whole number >= 1, got ${max}`);
    this.#max = max;
  }

  override set(key: K, value: V): this {
    if (super.has(key)) super.delete(key);
    super.set(key, value);
    while (this.size > this.#max) {
      const oldest = this.keys().next();
      if (oldest.done) break;
      super.delete(oldest.value);
    }
    return this;
  }
}
