/**
 * A stand-in for a real service that has drifted from the contract, put in
 * front of a real emulator: each answer is the emulator's, with the changes
 * asked for applied. It keeps the bytes it sent, so a test can show a client
 * behind the proxy got exactly those.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";

export interface Drifts {
  /** On `GET /v1/instances/{id}` answered 200: `name` becomes `title`. */
  renameInstanceName?: boolean;
  /** `GET /v1/subscription` answers 202 instead of 200. */
  subscriptionStatus?: number;
  /** A 404's `{detail}` loses `detail`. */
  dropErrorDetail?: boolean;
  /** A streamed answer gets an event of a type the contract does not know, before its last event. */
  unknownStreamEvent?: boolean;
  /** Every answer is sent gzip-compressed (`content-encoding: gzip`), as many real services do. */
  gzip?: boolean;
}

export interface DriftingUpstream {
  url: string;
  /** The bytes of each answer sent, in order. */
  sent: Buffer[];
  close(): Promise<void>;
}

const INSTANCE = /^\/v1\/instances\/[^/]+$/;

export async function startDriftingUpstream(target: string, drifts: Drifts): Promise<DriftingUpstream> {
  const sent: Buffer[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string" && !["host", "connection", "content-length"].includes(name)) headers.set(name, value);
    const answer = await fetch(target + req.url, { method: req.method ?? "GET", headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) });
    let text = await answer.text();
    let status = answer.status;
    const path = (req.url ?? "").split("?")[0]!;
    if (drifts.renameInstanceName && req.method === "GET" && INSTANCE.test(path) && status === 200) {
      const { name, ...rest } = JSON.parse(text) as Record<string, unknown>;
      text = JSON.stringify({ ...rest, title: name });
    }
    if (drifts.subscriptionStatus && path === "/v1/subscription") status = drifts.subscriptionStatus;
    if (drifts.dropErrorDetail && status === 404) text = "{}";
    const type = answer.headers.get("content-type") ?? "";
    if (drifts.unknownStreamEvent && type.startsWith("text/event-stream")) {
      const last = text.lastIndexOf("event: ");
      text = `${text.slice(0, last)}event: response.reasoning.delta\ndata: {"type":"response.reasoning.delta","delta":"hm"}\n\n${text.slice(last)}`;
    }
    // An empty answer (a 204) has no body to compress.
    const gzip = drifts.gzip === true && text !== "";
    const body = gzip ? gzipSync(text) : Buffer.from(text);
    sent.push(body);
    res.writeHead(status, { "content-type": type, "content-length": body.length, ...(gzip ? { "content-encoding": "gzip" } : {}) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
