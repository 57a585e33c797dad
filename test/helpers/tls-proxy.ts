/**
 * The reverse proxy in front of the bridge, as an operator runs it: it
 * terminates TLS (with the test-only certificate, test/fakes/tls-test-cert.ts)
 * on 127.0.0.1 and forwards each request, path unchanged, to the bridge's
 * plain-HTTP endpoint. A platform's fake that fetches the bridge's public
 * https URLs (LINE's servers fetching media) reaches the bridge through it.
 */
import { createServer } from "node:https";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream/promises";
import { TEST_TLS_CERT, TEST_TLS_KEY } from "../fakes/tls-test-cert.js";

export interface TlsProxy {
  /** `https://127.0.0.1:<port>`: the bridge's public base. */
  readonly url: string;
  close(): Promise<void>;
}

/** `target()`: the endpoint's `http://host:port` (asked per request, so the bridge may start after the proxy). */
export async function startTlsProxy(target: () => string): Promise<TlsProxy> {
  const server = createServer({ cert: TEST_TLS_CERT, key: TEST_TLS_KEY }, (req, res) => {
    const upstream = request(new URL(req.url ?? "/", target()), { method: req.method, headers: { ...req.headers } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      void pipeline(answer, res).catch(() => res.destroy());
    });
    upstream.once("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    void pipeline(req, upstream).catch(() => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
