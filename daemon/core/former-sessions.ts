/**
 * The lazy move of a conversation stored under its name from before the one
 * thread rule (vocabulary/conversation.ts). A Discord thread's session was
 * keyed by the thread's channel alone, which does not say its parent, so no
 * stored key can be renamed offline; the message does say both. So when a
 * message arrives whose session has nothing stored and whose former session
 * (`InboundMessage.formerly`) has, that state (its chain's last response, its
 * service session, its generation, an open question) is written under the
 * new key: one write, atomic on the file journal and on PostgreSQL, and done
 * once, since the new key is no longer empty afterwards (`onceAtATime`: also
 * for entries at once). The former record is
 * left as it was (nothing reads it again), but for an open question: its
 * expiry moves in the same write (to the new key and the thread's chat, so it
 * reaches the moved conversation and is one message with a tap in the
 * thread), and the former copy keeps no open question.
 *
 * While an entry journaled before the upgrade is still pending under the
 * former key (its first message too, with no state yet), the message joins
 * it there instead, so the two run in one order and the chain is not forked;
 * the move happens with a message after they are answered.
 *
 * Every entry that opens a conversation goes through `carriedOverRoute`: a
 * platform's message, a tap and an expiry (intake.ts), and a schedule's
 * firing (schedules/fire.ts, whose message says `formerly` by the platform's
 * own rule), so whichever comes first after the upgrade moves the session.
 */
import type { Logger } from "pino";
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

type CarryStore = Pick<Store, "session" | "writeTogether" | "pending" | "kv">;
type Carried = Pick<InboundMessage, "platform" | "accountId" | "chatId" | "chatType" | "userId" | "threadId" | "formerly">;

/**
 * Moves the former session of `message` to `route`'s, or routes the message
 * to the former one while it has pending entries. `route` is the resolved
 * one (a linked person's base is never a thread's: nothing to carry).
 * `within`: how `route`'s base comes from the chat's (a schedule's own
 * conversation beside it), applied to the former chat's base alike.
 */
export async function carryOverFormerSession(
  store: CarryStore,
  message: Carried,
  route: StoredRoute & { scope: RouteScope },
  within: (chatBase: string) => string = (chatBase) => chatBase,
): Promise<CarryOver> {
  const former = formerConversationOf(message);
  if (!former) return { kind: "none" };
  const fromBase = within(sessionBaseFor(former, route.scope));
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
 * The carry-overs under way, per store and new key. An entry whose key a move
 * is being written to (another message of the thread, or a schedule's firing,
 * a moment before) waits for that write and then looks again, finding the key
 * taken. Without it two at once both read the new key as empty before either
 * write is stored (the PostgreSQL store records a write once the database has
 * it) and both moved.
 */
const moving = new WeakMap<CarryStore, Map<SessionKey, Promise<CarryOver>>>();

async function onceAtATime(store: CarryStore, to: SessionKey, carry: () => Promise<CarryOver>): Promise<CarryOver> {
  const underWay = moving.get(store) ?? new Map<SessionKey, Promise<CarryOver>>();
  moving.set(store, underWay);
  for (let inFlight = underWay.get(to); inFlight; inFlight = underWay.get(to)) await inFlight.catch(() => undefined);
  const work = carry();
  underWay.set(to, work);
  try {
    return await work;
  } finally {
    if (underWay.get(to) === work) underWay.delete(to);
  }
}

/** The route an entry of `message` goes on (`route`, or its former one while that has pending entries), the former session moved first; a move is logged. */
export async function carriedOverRoute(
  deps: { store: CarryStore; log: Pick<Logger, "info"> },
  message: Carried,
  route: StoredRoute & { scope: RouteScope },
  within?: (chatBase: string) => string,
): Promise<StoredRoute> {
  const carried = await onceAtATime(deps.store, sessionKeyOf(route), () => carryOverFormerSession(deps.store, message, route, within));
  if (carried.kind === "moved")
    deps.log.info({ platform: message.platform, accountId: message.accountId, from: carried.from, to: carried.to }, "session moved to its thread's new key");
  return carried.kind === "joined" ? carried.route : route;
}
