/**
 * The lazy move of a conversation stored under its name from before the one
 * thread rule (vocabulary/conversation.ts). A Discord thread's session was
 * keyed by the thread's channel alone, which does not say its parent, so no
 * stored key can be renamed offline; the message does say both. So when a
 * message arrives whose session has nothing stored and whose former session
 * (`InboundMessage.formerly`) has, that state (its chain's last response, its
 * service session, its generation, an open question) is written under the
 * new key: one write, atomic on the file journal and on PostgreSQL, and done
 * once, since the new key is no longer empty afterwards (`createCarryOver`:
 * also for messages at once). The former record is
 * left as it was (nothing reads it again), but for an open question: its
 * expiry moves in the same write (to the new key and the thread's chat, so it
 * reaches the moved conversation and is one message with a tap in the
 * thread), and the former copy keeps no open question.
 *
 * While an entry journaled before the upgrade is still pending under the
 * former key (its first message too, with no state yet), the message joins
 * it there instead, so the two run in one order and the chain is not forked;
 * the move happens with a message after they are answered.
 */
import type { InboundMessage } from "../vocabulary/adapter.js";
import { formerConversationOf } from "../vocabulary/conversation.js";
import { type SessionKey, sessionKeyOf } from "../vocabulary/keys.js";
import type { SessionState, StoredRoute } from "../vocabulary/records.js";
import type { StateWrite, Store } from "../vocabulary/store.js";
import { questionExpiryMoved } from "./questions/questions.js";
import { sessionBaseFor } from "./routing.js";
import type { RouteScope } from "../config/schema.js";

/** A state nothing was ever stored in (what `Store.session` answers for an unknown key). */
const isBlank = (s: SessionState): boolean => s.generation === 0 && s.lastResponseId === undefined && s.sessionId === undefined && s.question === undefined;

export type CarryOver =
  /** Nothing to do: no former name, the new key has a session already, or the former one has none. */
  | { kind: "none" }
  /** The former session was copied to the route's key. */
  | { kind: "moved"; from: string; to: string }
  /** Entries of the former session are still pending: the message goes there (this route). */
  | { kind: "joined"; route: StoredRoute };

/**
 * Moves the former session of `message` to `route`'s, or routes the message
 * to the former one while it has pending entries. `route` is the resolved
 * one (a linked person's base is never a thread's: nothing to carry).
 */
export async function carryOverFormerSession(
  store: Pick<Store, "session" | "writeTogether" | "pending" | "kv">,
  message: Pick<InboundMessage, "platform" | "accountId" | "chatId" | "chatType" | "userId" | "threadId" | "formerly">,
  route: StoredRoute & { scope: RouteScope },
): Promise<CarryOver> {
  const former = formerConversationOf(message);
  if (!former) return { kind: "none" };
  const fromBase = sessionBaseFor(former, route.scope);
  if (fromBase === route.sessionBase) return { kind: "none" };
  const to = sessionKeyOf(route);
  if (!isBlank(store.session(to))) return { kind: "none" };
  const fromRoute = { ...route, sessionBase: fromBase };
  // Before its state: a first message journaled before the upgrade has none yet, and the next must still follow it.
  if (store.pending().some((e) => e.route.instanceId === route.instanceId && e.route.sessionBase === fromBase)) return { kind: "joined", route: fromRoute };
  const from = sessionKeyOf(fromRoute);
  const state = store.session(from);
  if (isBlank(state)) return { kind: "none" };
  const writes: StateWrite[] = [{ session: to, state }];
  const q = state.question;
  if (q && !q.closed) {
    // The open question goes with its expiry, and the former copy is no longer open (nothing answers or expires it twice).
    const { question: _moved, ...rest } = state;
    writes.push({ session: from, state: rest }, ...questionExpiryMoved(store, q.id, to, message));
  }
  await store.writeTogether(writes);
  return { kind: "moved", from, to };
}

/**
 * `carryOverFormerSession` once per key: a message whose key a move is being
 * written to (another message of the thread, a moment before) waits for that
 * write and then looks again, finding the key taken. Without it two messages
 * at once both read the new key as empty before either write is stored (the
 * PostgreSQL store records a write once the database has it) and both moved.
 */
export function createCarryOver(
  store: Parameters<typeof carryOverFormerSession>[0],
): (message: Parameters<typeof carryOverFormerSession>[1], route: Parameters<typeof carryOverFormerSession>[2]) => Promise<CarryOver> {
  const moving = new Map<SessionKey, Promise<CarryOver>>();
  return async function carryOver(message, route) {
    const to = sessionKeyOf(route);
    for (let inFlight = moving.get(to); inFlight; inFlight = moving.get(to)) await inFlight.catch(() => undefined);
    const work = carryOverFormerSession(store, message, route);
    moving.set(to, work);
    try {
      return await work;
    } finally {
      if (moving.get(to) === work) moving.delete(to);
    }
  };
}
