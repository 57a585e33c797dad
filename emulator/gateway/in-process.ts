/**
 * The emulator's hop to its own gateway, in process: an HTTP/1.1 connection
 * over a pair of in-memory streams instead of a loopback TCP socket. The
 * gateway's HTTP server takes one end as any connection it accepted
 * (`server.emit("connection")`, which Node documents for any duplex stream);
 * undici's pool gets the other from its `connect` hook. Requests, answers,
 * streams, keep-alive, a destroyed or half-closed socket (the gateway's reset
 * faults) travel as on TCP; only the kernel is left out.
 *
 * Why (docs/architecture.md, "Whole-second waits"): a burst of first turns
 * made the pool open a connection per turn into the emulator's own busy
 * process, each waiting in its accept queue, and the burst's turns waited
 * seconds for them. An in-memory connection is there at once.
 */
import type { Socket } from "node:net";
import { Duplex } from "node:stream";
import { buildConnector } from "undici";

/** One side of a pair: what it writes, the other reads; back-pressure holds a write until the reader takes more. */
class PairSide extends Duplex {
  peer!: PairSide;
  /** A write held until the peer reads again (its buffer was full). */
  #held: (() => void) | undefined;

  constructor() {
    super({ allowHalfOpen: true });
  }

  override _read(): void {
    const release = this.peer.#held;
    this.peer.#held = undefined;
    release?.();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    // Written after the other side closed: refused, as TCP answers EPIPE.
    if (this.peer.destroyed) callback(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    else if (this.peer.push(chunk)) callback();
    else this.#held = () => callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    // Half-close: the peer reads the end of the stream, as after a FIN.
    if (!this.peer.destroyed) this.peer.push(null);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const held = this.#held;
    this.#held = undefined;
    held?.();
    // A socket closed on one side ends the other's input and closes it, as a closed TCP connection does.
    const peer = this.peer;
    if (!peer.destroyed) {
      peer.push(null);
      process.nextTick(() => peer.destroy());
    }
    callback(error);
  }

  /** What undici and Node's HTTP code look for on a socket; an in-memory stream holds no handle to ref. */
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
}

/** Two connected in-memory streams: [the client's end, the server's end]. */
export function duplexPair(): [Duplex, Duplex] {
  const a = new PairSide();
  const b = new PairSide();
  a.peer = b;
  b.peer = a;
  return [a, b];
}

/**
 * undici's `connect` hook: connections to `host` (`127.0.0.1:PORT`, the
 * gateway's own) are made in process by `open` (undefined when the gateway is
 * not listening: refused, as TCP would); any other origin (an instance's
 * `gateway_override`) goes over TCP as before.
 */
export function inProcessConnector(host: string, open: () => Duplex | undefined): buildConnector.connector {
  const tcp = buildConnector({});
  return (options, callback) => {
    if (options.protocol !== "http:" || options.host !== host) return tcp(options, callback);
    const socket = open();
    if (!socket) {
      const refused = Object.assign(new Error(`connect ECONNREFUSED ${options.host}`), { code: "ECONNREFUSED" });
      return callback(refused, null);
    }
    // undici types the hook's socket as a net.Socket; what it uses of one (a duplex stream, ref,
    // unref, setNoDelay, setKeepAlive) a PairSide has. As net.connect does, it is handed over once
    // connected, never inside the call.
    const connected = socket as unknown as Socket;
    process.nextTick(() => callback(null, connected));
  };
}
