/**
 * Which records changed since the last write, without the code that changes
 * them saying so: the state's record collections are proxies that note the
 * record (collection and id) behind every set or delete, at any depth
 * (`org.instance_ids.push(id)` marks that organization). The store then
 * writes only those records (store.ts, `state.log`), so a write costs in
 * proportion to what changed, not to everything stored.
 *
 * Reads go through the proxies too; what they hand out for a record is a
 * proxy of it (one per object, cached), and what is assigned in is stored
 * unwrapped at every depth, so the plain state underneath never holds a
 * proxy: `{ ...record, env: {...} }` copies the record's nested objects as
 * the proxies the read handed out, and a proxy left in the state is what
 * `structuredClone` (snapshot export) cannot copy.
 */
import type { EmulatorState } from "./state.js";

/** The record collections kept in `state.json` and its log. */
export const COLLECTIONS = ["organizations", "credentials", "keys", "instances", "billing", "sandboxes"] as const;
export type Collection = (typeof COLLECTIONS)[number];

/** The records changed since `take()` was last called, by collection. */
export class DirtyRecords {
  #changed = new Map<Collection, Set<string>>();
  #all = false;

  mark(collection: Collection, id: string): void {
    let ids = this.#changed.get(collection);
    if (!ids) {
      ids = new Set();
      this.#changed.set(collection, ids);
    }
    ids.add(id);
  }

  /** Everything changed (a whole new state): the next write is a full one. */
  markAll(): void {
    this.#all = true;
  }

  get empty(): boolean {
    return !this.#all && this.#changed.size === 0;
  }

  /** What changed, and forgets it (`all`: write everything). */
  take(): { all: boolean; changed: Map<Collection, Set<string>> } {
    const taken = { all: this.#all, changed: this.#changed };
    this.#all = false;
    this.#changed = new Map();
    return taken;
  }

  /** Puts back what a failed write took, so its retry writes it. */
  restore(taken: { all: boolean; changed: Map<Collection, Set<string>> }): void {
    if (taken.all) this.#all = true;
    for (const [collection, ids] of taken.changed) for (const id of ids) this.mark(collection, id);
  }
}

type Json = Record<string | symbol, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;

/** Every tracking proxy (of any state, also one replaced since) -> the plain object behind it. */
const plainOf = new WeakMap<object, object>();

/**
 * `value` as the plain state may hold it: a proxy becomes the plain object
 * behind it (plain all through: only unwrapped values are ever stored), and
 * a new object or array has the proxies anywhere inside it replaced, in
 * place: it becomes the state's own.
 */
function unwrap(value: unknown, seen = new WeakSet<object>()): unknown {
  if (!isObject(value)) return value;
  const plain = plainOf.get(value);
  if (plain) return plain;
  if (seen.has(value)) return value;
  seen.add(value);
  for (const key of Reflect.ownKeys(value)) {
    const child = value[key];
    if (!isObject(child)) continue;
    const unwrapped = unwrap(child, seen);
    if (unwrapped !== child) value[key] = unwrapped;
  }
  return value;
}

/** A stored property's descriptor with its value unwrapped (`Object.defineProperty` on a tracked object). */
const unwrapDescriptor = (descriptor: PropertyDescriptor): PropertyDescriptor =>
  "value" in descriptor ? { ...descriptor, value: unwrap(descriptor.value) } : descriptor;

/** The state with its collections tracked into `dirty`; the plain objects stay underneath. */
export function trackState(state: EmulatorState, dirty: DirtyRecords): EmulatorState {
  /** One collection: a proxy of its record map, handing out tracked records. */
  const trackCollection = <T extends object>(records: T, collection: Collection): T => {
    const proxies = new WeakMap<object, Json>();
    /** A proxy of an object inside record `id`: changes anywhere in it mark the record. */
    const wrap = (target: Json, id: string): Json => {
      const known = proxies.get(target);
      if (known) return known;
      const proxy = new Proxy(target, {
        get(t, key) {
          const value = t[key];
          return isObject(value) ? wrap(value, id) : value;
        },
        set(t, key, value) {
          t[key] = unwrap(value);
          dirty.mark(collection, id);
          return true;
        },
        deleteProperty(t, key) {
          delete t[key];
          dirty.mark(collection, id);
          return true;
        },
        defineProperty(t, key, descriptor) {
          const done = Reflect.defineProperty(t, key, unwrapDescriptor(descriptor));
          if (done) dirty.mark(collection, id);
          return done;
        },
      });
      proxies.set(target, proxy);
      plainOf.set(proxy, target);
      return proxy;
    };
    const proxy = new Proxy(records, {
      get(t, key) {
        const value: unknown = Reflect.get(t, key);
        return typeof key === "string" && isObject(value) ? wrap(value, key) : value;
      },
      set(t, key, value) {
        Reflect.set(t, key, unwrap(value));
        if (typeof key === "string") dirty.mark(collection, key);
        return true;
      },
      deleteProperty(t, key) {
        Reflect.deleteProperty(t, key);
        if (typeof key === "string") dirty.mark(collection, key);
        return true;
      },
      defineProperty(t, key, descriptor) {
        const done = Reflect.defineProperty(t, key, unwrapDescriptor(descriptor));
        if (done && typeof key === "string") dirty.mark(collection, key);
        return done;
      },
    });
    plainOf.set(proxy, records);
    return proxy;
  };
  const collections = new Map<string | symbol, object>();
  const isCollection = (key: string | symbol): key is Collection => (COLLECTIONS as readonly (string | symbol)[]).includes(key);
  const collectionProxy = (key: Collection): object => {
    let proxy = collections.get(key);
    if (!proxy) {
      proxy = trackCollection(state[key], key);
      collections.set(key, proxy);
    }
    return proxy;
  };
  // The top level stays the plain object underneath: what is set on it (outside the collections) is set there.
  const tracked = new Proxy(state, {
    get: (t, key) => (isCollection(key) ? collectionProxy(key) : Reflect.get(t, key)),
    set(t, key, value) {
      Reflect.set(t, key, unwrap(value));
      if (isCollection(key)) {
        collections.delete(key);
        dirty.markAll();
      }
      return true;
    },
  });
  plainOf.set(tracked, state);
  return tracked;
}
