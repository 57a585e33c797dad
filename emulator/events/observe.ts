/**
 * State-change notifications without touching the store: a view of the store
 * whose `commit` and `replace` also tell a listener. Bursts within one turn of
 * the event loop become one `state` event, which says whether the whole state
 * was replaced (reset, snapshot import): a view that shows anything must then
 * load again. `touch` (bookkeeping such as a key's last use) is not a change
 * anyone watches live.
 */
import type { Store } from "../store/store.js";

export function observeStore(store: Store, onChange: (replaced: boolean) => void): Store {
  let pending = false;
  let replaced = false;
  const notify = (whole: boolean) => {
    replaced ||= whole;
    if (pending) return;
    pending = true;
    setImmediate(() => {
      const wasReplaced = replaced;
      pending = false;
      replaced = false;
      onChange(wasReplaced);
    });
  };
  // Everything else is the store's own, reached through the prototype: members added to Store
  // later keep working unchanged, and reads (`data` on every request) pay no Proxy trap.
  const observed: Store = Object.create(store) as Store;
  observed.commit = () => {
    store.commit();
    notify(false);
  };
  observed.replace = (state: Store["data"]) => {
    store.replace(state);
    notify(true);
  };
  return observed;
}
