/**
 * State-change notifications without touching the store: a view of the store
 * whose `commit` and `replace` also tell a listener. Bursts within one turn of
 * the event loop become one `state` event, which says whether the whole state
 * was replaced (reset, snapshot import): a view that shows anything must then
 * load again. `touch` (bookkeeping such as a key's last use) is not a change
 * anyone watches live.
 */
import type { Store } from "../store/store.js";

/** The changes of one turn of the event loop, told once, after it. */
class ChangeNotices {
  readonly #onChange: (replaced: boolean) => void;
  /** A notice is scheduled for this turn of the event loop. */
  #pending = false;
  /** A change this turn replaced the whole state; false when no notice is pending. */
  #replaced = false;

  constructor(onChange: (replaced: boolean) => void) {
    this.#onChange = onChange;
  }

  notify(whole: boolean): void {
    this.#replaced ||= whole;
    if (this.#pending) return;
    this.#pending = true;
    setImmediate(() => {
      const replaced = this.#replaced;
      this.#pending = false;
      this.#replaced = false;
      this.#onChange(replaced);
    });
  }
}

export function observeStore(store: Store, onChange: (replaced: boolean) => void): Store {
  const notices = new ChangeNotices(onChange);
  // A Proxy, not a copy: members added to Store later keep working unchanged. They are read
  // from the store itself and its methods bound to it: the store keeps its state in private
  // fields, which only the store itself (not a proxy of it) can reach.
  // Each method is bound once, not on every read: the request path reads the store many times per request.
  const bound = new Map<string | symbol, unknown>();
  return new Proxy(store, {
    get(target, property) {
      if (property === "commit")
        return () => {
          target.commit();
          notices.notify(false);
        };
      if (property === "replace")
        return (state: Store["data"]) => {
          target.replace(state);
          notices.notify(true);
        };
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      const known = bound.get(property);
      if (known !== undefined) return known;
      const method: unknown = value.bind(target);
      bound.set(property, method);
      return method;
    },
  });
}
