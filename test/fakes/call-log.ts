/**
 * What a platform fake saw its clients do, in order: each call with the time
 * and the connection that made it, so multi-node tests can assert that two
 * owners never talked to a platform at the same time ("no overlap").
 *
 * A connection is named once per transport object (an HTTP client socket, a
 * gateway WebSocket, a Baileys socket): `tcp-1`, `gateway-2`, `socket-0`.
 */

export interface PlatformCall {
  /** The fake's clock (ms). */
  at: number;
  connection: string;
  /** Method or operation: `getUpdates`, `POST /channels/:id/messages`, `IDENTIFY`, `sendMessage`. */
  call: string;
}

export class CallLog {
  readonly #calls: PlatformCall[] = [];
  readonly #names = new WeakMap<object, string>();
  #next = 0;

  constructor(readonly now: () => number = () => Date.now()) {}

  /** The connection's stable name, made from `prefix` the first time it is seen. */
  name(connection: object, prefix: string): string {
    let name = this.#names.get(connection);
    if (name === undefined) {
      name = `${prefix}-${++this.#next}`;
      this.#names.set(connection, name);
    }
    return name;
  }

  record(connection: string, call: string): void {
    this.#calls.push({ at: this.now(), connection, call });
  }

  /** Every call so far, oldest first. */
  list(): PlatformCall[] {
    return [...this.#calls];
  }
}
