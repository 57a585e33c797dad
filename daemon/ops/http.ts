/**
 * The ops endpoint: `GET /healthz` (200 when healthy, 503 otherwise, JSON
 * body), `GET /metrics` (Prometheus text) and, when given, the operator's
 * console under `/ui/` (console/server.ts). Plain node:http: a few routes do
 * not need a framework. Bind it to loopback unless a scraper needs more.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

export interface HealthReport {
  healthy: boolean;
  /** Anything else worth showing (adapter states, queue depth, ...); sent as JSON. */
  [detail: string]: unknown;
}

export interface OpsServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  metrics: { registry: Registry };
  health: () => HealthReport | Promise<HealthReport>;
  /** The operator's console (console/server.ts): true when it took the request. */
  console?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

export interface OpsServer {
  /** e.g. `http://127.0.0.1:9464` (the real port when 0 was asked for). */
  url: string;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { registry } = options.metrics;
  const server = createServer((req, res) => {
    if (options.console?.(req, res)) return;
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    const json = (status: number, body: unknown) => send(status, "application/json; charset=utf-8", JSON.stringify(body));
    if (path !== "/healthz" && path !== "/metrics") return json(404, { error: "not found" });
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return json(405, { error: "method not allowed" });
    }
    const work =
      path === "/healthz"
        ? Promise.resolve()
            .then(options.health)
            .then(
              (report) => json(report.healthy ? 200 : 503, report),
              // The error itself may carry details nobody outside should see.
              () => json(503, { healthy: false, error: "health check failed" }),
            )
        : registry.metrics().then(
            (text) => send(200, registry.contentType, text),
            () => json(500, { error: "metrics collection failed" }),
          );
    void work.catch(() => res.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      })),
  };
}
