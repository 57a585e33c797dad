/**
 * State-change notifications without touching the store: a view of the store
 * whose `commit` and `replace` also tell a listener. Bursts within one turn of
 * the event loop become one `state` event. `touch` (bookkeeping such as a
 * key's last use) is not a change anyone watches live.
 */
import type { Store } from "../store/store.js";

export function observeStore(store: Store, onChange: () => void): Store {
  let pending = false;
  const notify = () => {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      onChange();
    });
  };
  // A Proxy, not a copy: members added to Store later keep working unchanged.
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "commit")
        return () => {
          target.commit();
          notify();
        };
      if (property === "replace")
        return (state: Store["data"]) => {
          target.replace(state);
          notify();
        };
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}
