import type { Duplex } from "node:stream";
import type { Clock } from "../../shared/clock.js";
import type { Random } from "../../shared/random.js";
import type { GatewayState, StoredResponse } from "../store/state.js";
import type { ScriptRegistry } from "./script/registry.js";

// The stored records are defined once, by the store's schema (store/schema.ts).
export type { GatewayState, StoredResponse };

export type GatewayChange = { kind: "record"; response: StoredResponse } | { kind: "forget"; instanceId: string };

/** A fault injected for one request, applied before the request is read. */
export interface GatewayFault {
  status?: number;
  error?: "reset" | "timeout";
  /** With `error: "reset"` on a streamed answer: the connection is cut after this many deltas (0: after the first events). */
  resetAfterDeltas?: number;
  latencyMs?: number;
}

export interface GatewayOptions {
  /** A getter, because the emulator's store may replace the object (reset, import). */
  state: () => GatewayState;
  /**
   * Called after every mutation (which one, so a store can append instead of
   * rewriting). A turn is answered once the promise it returns settles, so a
   * store can make it durable first.
   */
  onChange: (change: GatewayChange) => void | Promise<void>;
  /** Awaited before an instance's conversations are looked at (a store that reads them on first use). */
  prepare?: (instanceId: string) => Promise<void>;
  /** Instance ids this gateway serves; others get 404 (default: any). */
  serves?: (instanceId: string) => boolean;
  /** Called with each turn once it is stored (the control plane's events stream). */
  onTurn?: (response: StoredResponse) => void;
  clock: Clock;
  random: Random;
  /** Consulted once per routed request, before anything else happens. */
  faultFor?: (instanceId: string) => GatewayFault | undefined;
  /** The model scripts in force (default: none, the echo and its directives answer). */
  scripts?: ScriptRegistry;
  /** The sandbox an instance belongs to, whose model script it sees (default: none). */
  sandboxOf?: (instanceId: string) => string | undefined;
  /** Runs a request of a sandbox's instance in that sandbox's context, so `clock` is its clock (default: the request runs as is). */
  inSandbox?: (sandboxId: string, fn: () => void) => void;
  /**
   * Writes a file into the instance's tree for `!file` (`path` relative to it,
   * e.g. `workspace/a.png`). Default: none, and `!file` answers 501.
   */
  writeFile?: (instanceId: string, path: string, bytes: Buffer) => Promise<void>;
}

export interface FakeGateway {
  /** Resolves the base URL, e.g. `http://127.0.0.1:PORT`. Defaults: port 0, host 127.0.0.1. */
  listen(port?: number, host?: string): Promise<string>;
  /** Throws if not listening. */
  readonly url: string;
  /** `${url}/instances/${instanceId}`: what the emulator stores as `gateway_url`. */
  urlFor(instanceId: string): string;
  /** Drops every response and session head of the instance (instance deleted). */
  forgetInstance(instanceId: string): void;
  /**
   * A connection to this gateway in process (gateway/in-process.ts), served as one accepted over
   * TCP; undefined when it is not listening. The emulator's own hop to its gateway uses it.
   */
  connectInProcess(): Duplex | undefined;
  /** Stops listening and destroys open sockets, hanging ones included. */
  close(): Promise<void>;
}
