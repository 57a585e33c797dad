/**
 * Listening for many first connections at once. A connection the kernel has
 * completed waits in the listening socket's accept queue until the process
 * takes it; when that queue is full the kernel drops the handshake and the
 * client's TCP retries it after 1 s, then 3 s, 7 s: the whole-second waits a
 * suite whose workers all start together meets. Node's default queue is 511;
 * this one is 4096, which the kernel caps at `net.core.somaxconn`
 * (docs/architecture.md, "Performance"). Used by the emulator's API and its gateway.
 */
import type { Server } from "node:http";

/**
 * How long an idle keep-alive connection stays open, ms. Node's default is 5 s, and it
 * is told to clients (`Keep-Alive: timeout=5`), so a client's pool closes a connection
 * after about 4 s idle. A client whose load comes and goes (a closed loop whose chats
 * finish at different times, a suite between two files) then opens new connections in
 * the middle of a busy run, and a server busy with its open connections takes a new one
 * from its accept queue only after seconds (docs/architecture.md, "Performance"). Longer
 * than the 60 s many clients' pools keep a connection, so the client always closes first
 * and never reuses a socket the server is closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** The accept queue asked for; the kernel gives min(this, net.core.somaxconn). */
export const LISTEN_BACKLOG = 4096;

export function listenWithBacklog<S extends Server>(server: S, port: number, host: string): Promise<S> {
  return new Promise<S>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off("error", onError);
      resolve(server);
    });
  });
}
