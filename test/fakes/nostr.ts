/**
 * A fake Nostr relay that follows the protocol's documents, over a real
 * WebSocket (ws):
 * - NIP-01: ["EVENT", e] is verified (id = sha256 of the serialised event,
 *   schnorr signature) and answered ["OK", id, true|false, "prefix: text"]
 *   (a repeat is OK true "duplicate:"); ["REQ", sub, ...filters] gets the
 *   stored matches, ["EOSE", sub], then live matches; ["CLOSE", sub] ends it;
 *   the relay may end one itself with ["CLOSED", sub, "prefix: text"].
 * - NIP-42: with `auth`, the relay sends ["AUTH", challenge] on connect and
 *   refuses REQ (CLOSED) and EVENT (OK false) with "auth-required:" until a
 *   kind 22242 event signed by the client, naming this relay and the
 *   challenge, created within ten minutes, comes in ["AUTH", e] (answered OK).
 *   Direct messages (kinds 4 and 1059) are then served only to the
 *   authenticated key their `p` tag names, as NIP-17 asks relays to do.
 * - Rate limits: `rateLimit(n)` refuses the next n publishes with OK false
 *   "rate-limited:"; `closeSubscriptions(reason)` sends CLOSED to every open one.
 * - `drop()` cuts every connection (no close frame), as a network fault would.
 */
import type { AddressInfo } from "node:net";
import { type Event, type Filter, matchFilters, verifyEvent } from "nostr-tools";
import { WebSocket, WebSocketServer } from "ws";

export interface FakeRelayOptions {
  /** NIP-42: clients must authenticate before reading or publishing. */
  auth?: boolean;
}

interface Client {
  socket: WebSocket;
  challenge: string;
  authed: string | undefined;
  subs: Map<string, Filter[]>;
}

export interface FakeRelay {
  url: string;
  /** Every event stored, in arrival order. */
  events(): Event[];
  /** Events accepted from the key `pubkey`... or, for wraps (signed by a random key), those p-tagging `to`. */
  to(pubkey: string): Event[];
  /** Stores `event` as if published by someone, and sends it to matching subscriptions. */
  inject(event: Event): void;
  rateLimit(n: number): void;
  closeSubscriptions(reason: string): void;
  drop(): void;
  /** How many REQs have been seen, and their filters. */
  requests(): Filter[][];
  connections(): number;
  /** Calls `listener` each time the relay sends a subscriber an event (a test may kill the subscriber there). */
  onDeliver(listener: (event: Event) => void): void;
  close(): Promise<void>;
}

const DM_KINDS = new Set([4, 1059]);

export async function createFakeRelay(options: FakeRelayOptions = {}): Promise<FakeRelay> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const stored: Event[] = [];
  const ids = new Set<string>();
  const clients = new Set<Client>();
  const reqs: Filter[][] = [];
  let limited = 0;
  const deliveries: ((event: Event) => void)[] = [];
  let counter = 0;

  const send = (client: Client, message: unknown[]): void => {
    if (client.socket.readyState !== WebSocket.OPEN) return;
    client.socket.send(JSON.stringify(message));
    if (message[0] === "EVENT" && message.length === 3) for (const l of deliveries) l(message[2] as Event);
  };
  /** NIP-17: direct messages go only to the authenticated recipient (where authentication is on). */
  const mayRead = (client: Client, event: Event) =>
    !options.auth || !DM_KINDS.has(event.kind) || event.tags.some((t) => t[0] === "p" && t[1] === client.authed);

  function store(event: Event): void {
    stored.push(event);
    ids.add(event.id);
    for (const client of clients)
      for (const [sub, filters] of client.subs) if (matchFilters(filters, event) && mayRead(client, event)) send(client, ["EVENT", sub, event]);
  }

  function onEvent(client: Client, event: Event): void {
    if (!event || typeof event.id !== "string") {
      send(client, ["NOTICE", "invalid: malformed event"]);
      return;
    }
    if (options.auth && !client.authed) {
      send(client, ["OK", event.id, false, "auth-required: authenticate to publish"]);
      return;
    }
    if (!verifyEvent(event)) {
      send(client, ["OK", event.id, false, "invalid: bad id or signature"]);
      return;
    }
    if (limited > 0) {
      limited--;
      send(client, ["OK", event.id, false, "rate-limited: slow down"]);
      return;
    }
    if (ids.has(event.id)) {
      send(client, ["OK", event.id, true, "duplicate: already have this event"]);
      return;
    }
    send(client, ["OK", event.id, true, ""]);
    store(event);
  }

  function onAuth(client: Client, event: Event): void {
    const tag = (name: string) => event?.tags?.find((t) => t[0] === name)?.[1];
    const fresh = Math.abs(Math.floor(Date.now() / 1000) - (event?.created_at ?? 0)) <= 600;
    const ok = event?.kind === 22242 && verifyEvent(event) && tag("challenge") === client.challenge && tag("relay")?.replace(/\/$/, "") === url && fresh;
    if (!ok) {
      send(client, ["OK", event?.id ?? "", false, "restricted: bad authentication"]);
      return;
    }
    client.authed = event.pubkey;
    send(client, ["OK", event.id, true, ""]);
  }

  function onReq(client: Client, sub: string, filters: Filter[]): void {
    reqs.push(filters);
    if (options.auth && !client.authed) {
      send(client, ["CLOSED", sub, "auth-required: authenticate to read direct messages"]);
      return;
    }
    client.subs.set(sub, filters);
    for (const event of stored) if (matchFilters(filters, event) && mayRead(client, event)) send(client, ["EVENT", sub, event]);
    send(client, ["EOSE", sub]);
  }

  server.on("connection", (socket) => {
    const client: Client = { socket, challenge: `challenge-${++counter}`, authed: undefined, subs: new Map() };
    clients.add(client);
    socket.on("close", () => clients.delete(client));
    socket.on("error", () => clients.delete(client));
    if (options.auth) send(client, ["AUTH", client.challenge]);
    socket.on("message", (data) => {
      let message: unknown;
      try {
        message = JSON.parse(String(data));
      } catch {
        send(client, ["NOTICE", "invalid: not JSON"]);
        return;
      }
      if (!Array.isArray(message)) {
        send(client, ["NOTICE", "invalid: not an array"]);
        return;
      }
      const [verb, ...rest] = message as [string, ...unknown[]];
      if (verb === "EVENT") return onEvent(client, rest[0] as Event);
      if (verb === "AUTH") return onAuth(client, rest[0] as Event);
      if (verb === "REQ") return onReq(client, String(rest[0]), rest.slice(1) as Filter[]);
      if (verb === "CLOSE") return void client.subs.delete(String(rest[0]));
      send(client, ["NOTICE", `invalid: unknown message ${String(verb)}`]);
    });
  });

  return {
    url,
    events: () => [...stored],
    to: (pubkey) => stored.filter((e) => e.tags.some((t) => t[0] === "p" && t[1] === pubkey)),
    inject: (event) => {
      if (!ids.has(event.id)) store(event);
    },
    rateLimit: (n) => {
      limited = n;
    },
    closeSubscriptions: (reason) => {
      for (const client of clients) {
        for (const sub of client.subs.keys()) send(client, ["CLOSED", sub, reason]);
        client.subs.clear();
      }
    },
    drop: () => {
      for (const client of clients) client.socket.terminate();
    },
    requests: () => reqs.map((r) => r.map((f) => ({ ...f }))),
    connections: () => clients.size,
    onDeliver: (listener) => void deliveries.push(listener),
    close: async () => {
      for (const client of clients) client.socket.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The person's side: a real nostr-tools client that writes to the bot, over the
 * same protocol, and reads what the bot sent them (decrypted).
 */
export { createPerson, type Person } from "./nostr-person.js";
