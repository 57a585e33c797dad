/**
 * An HTTP proxy in front of the emulator that can lose an answer after the
 * service produced it: the request goes through, the emulator (and its
 * gateway) handles and records it, and then the client's connection is reset,
 * or the answer is held back forever (so a test can kill the client while it
 * waits). The faults the emulator's control plane injects happen before the
 * gateway handles a request; these are the ambiguous ones.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ProxiedRequest {
  method: string;
  path: string;
  /** The parsed JSON body, when it was JSON. */
  json: unknown;
}

/**
 * What becomes of a request: passed on; answered upstream and then the
 * connection reset; answered upstream and the answer held back until the proxy
 * closes; or never forwarded nor answered ("drop").
 */
export type ProxyFate = "pass" | "reset" | "hold" | "drop";

export interface LossyProxy {
  url: string;
  /** Decides each request's fate (default: pass). */
  setPolicy(policy: (request: ProxiedRequest) => ProxyFate | Promise<ProxyFate>): void;
  /** Resolves with the next request held back: answered upstream ("hold") or not forwarded ("drop"). */
  nextHeld(): Promise<ProxiedRequest>;
  /** Answers lost so far (reset or held). */
  readonly lost: ProxiedRequest[];
  close(): Promise<void>;
}

export async function createLossyProxy(upstream: string): Promise<LossyProxy> {
  let policy: (request: ProxiedRequest) => ProxyFate | Promise<ProxyFate> = () => "pass";
  const lost: ProxiedRequest[] = [];
  const heldWaiters: ((r: ProxiedRequest) => void)[] = [];
  const heldQueue: ProxiedRequest[] = [];
  const held = new Set<ServerResponse>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    let json: unknown;
    try {
      json = body.length ? JSON.parse(body.toString("utf8")) : undefined;
    } catch {
      json = undefined;
    }
    const request: ProxiedRequest = { method: req.method ?? "GET", path: req.url ?? "/", json };
    const fate = await policy(request);
    const holdBack = () => {
      lost.push(request);
      held.add(res);
      const waiter = heldWaiters.shift();
      if (waiter) waiter(request);
      else heldQueue.push(request);
    };
    if (fate === "drop") return holdBack();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "connection" && k !== "content-length") headers[k] = v;
    const answer = await fetch(`${upstream}${request.path}`, {
      method: request.method,
      headers,
      ...(body.length && request.method !== "GET" && request.method !== "HEAD" ? { body } : {}),
    });
    const data = Buffer.from(await answer.arrayBuffer());
    if (fate === "reset") {
      lost.push(request);
      req.socket.destroy();
      return;
    }
    if (fate === "hold") return holdBack();
    const out: Record<string, string> = {};
    answer.headers.forEach((v, k) => {
      if (k !== "content-length" && k !== "transfer-encoding" && k !== "connection" && k !== "content-encoding") out[k] = v;
    });
    res.writeHead(answer.status, out).end(data);
  }

  const server: Server = createServer((req, res) => {
    res.on("error", () => {});
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setPolicy(p) {
      policy = p;
    },
    nextHeld() {
      const ready = heldQueue.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve) => heldWaiters.push(resolve));
    },
    lost,
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The `input` of a Responses request, when the request is one. */
export function responsesInput(request: ProxiedRequest): string | undefined {
  if (request.method !== "POST" || !request.path.endsWith("/responses")) return undefined;
  const json = request.json;
  return typeof json === "object" && json !== null && "input" in json && typeof json.input === "string" ? json.input : undefined;
}
