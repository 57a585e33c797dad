/**
 * The emulator's API on a socket: the server `listen` started, the URL it
 * publishes, and whether the emulator has been closed (a second close does nothing).
 */
import type { Server } from "node:http";
import type { Express } from "express";
import { KEEP_ALIVE_TIMEOUT_MS, listenWithBacklog } from "../../shared/listen.js";
import { createExpressServer } from "./express-server.js";

export class ApiListener {
  /** What answers every request of the server. */
  readonly #app: Express;
  /** The server of the last successful `listen`; undefined before one. */
  #server: Server | undefined;
  /** The base URL of the last successful `listen`; undefined exactly while `#server` is. */
  #publicUrl: string | undefined;
  /** The address that `listen` bound, to tell a wildcard (0.0.0.0, ::) from a usable URL; set with `#publicUrl`. */
  #listeningOn: string | undefined;
  /** Set by the first `markClosed`; never unset. */
  #closed = false;

  constructor(app: Express) {
    this.#app = app;
  }

  /** Starts the API on `port` (0 = any free port); resolves its base URL. */
  async listen(port: number, host: string): Promise<string> {
    const api = createExpressServer(this.#app);
    api.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    this.#server = await listenWithBacklog(api, port, host);
    const address = this.#server.address();
    if (!address || typeof address === "string") throw new Error("emulator: no address");
    const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
    this.#listeningOn = address.address;
    this.#publicUrl = `http://${shownHost}:${address.port}`;
    return this.#publicUrl;
  }

  /** The base URL; throws before `listen`. */
  get url(): string {
    if (!this.#publicUrl) throw new Error("emulator: not listening");
    return this.#publicUrl;
  }

  /** What links are built on: the base URL, or `http://localhost` before `listen`. */
  linkBase(): string {
    return this.#publicUrl ?? "http://localhost";
  }

  /** The base URL a client can use as it is: undefined before `listen` and on a wildcard address. */
  usableUrl(): string | undefined {
    return this.#listeningOn && !isWildcard(this.#listeningOn) ? this.#publicUrl : undefined;
  }

  /** True on the first call only: the caller closes what the emulator holds then. */
  markClosed(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    return true;
  }

  /** Closes the server, its open connections cut; nothing to do before `listen`. */
  async stopServer(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

const isWildcard = (address: string) => address === "0.0.0.0" || address === "::";
