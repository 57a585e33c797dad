/**
 * The store the relay writes through, watched: every durable step of a
 * message (journaled, its reply known, completed) and every pairing change
 * is told to the console's activity feed after it is durable. The store stays
 * the one source of truth; the feed only sees what it already holds.
 */
import { PAIRING_NAMESPACE } from "../../core/pairing.js";
import type { JournalEntry } from "../../vocabulary/records.js";
import type { Store } from "../../vocabulary/store.js";
import type { ActivityFeed } from "./activity.js";

export function observedStore(store: Store, feed: ActivityFeed): Store {
  const entriesOf = (ids: readonly string[]) => ids.map((id) => store.get(id)).filter((e): e is JournalEntry => !!e);
  return {
    pending: () => store.pending(),
    get: (id) => store.get(id),
    has: (key) => store.has(key),
    async add(input) {
      const entry = await store.add(input);
      feed.accepted(entry);
      return entry;
    },
    async recordReply(leaderId, reply, session) {
      await store.recordReply(leaderId, reply, session);
      const lead = store.get(leaderId);
      if (lead) feed.replied(lead, reply, entriesOf(reply.members), session?.state);
    },
    recordSent: (id, sent) => store.recordSent(id, sent),
    recordPreview: (id, preview) => store.recordPreview(id, preview),
    async complete(ids) {
      // Read before: completed entries are gone from the store.
      const entries = entriesOf(ids);
      await store.complete(ids);
      feed.completed(entries);
    },
    session: (key) => store.session(key),
    setSession: (key, state) => store.setSession(key, state),
    writeTogether: (writes) => store.writeTogether(writes),
    kv(namespace) {
      const kv = store.kv(namespace);
      if (namespace !== PAIRING_NAMESPACE) return kv;
      return {
        get: (key) => kv.get(key),
        keys: () => kv.keys(),
        async set(key, value) {
          await kv.set(key, value);
          feed.pairingChanged();
        },
      };
    },
    linkBook: store.linkBook,
    holdSession: store.holdSession,
    onDrained: (listener) => store.onDrained(listener),
    readAttachment: (attachment) => store.readAttachment(attachment),
    close: () => store.close(),
    abandon: () => store.abandon(),
  };
}
