/**
 * The HTTP Events API endpoint: Slack posts each event, signed. A request is
 * checked (path, size, signature over the raw bytes with a five-minute
 * window) before anything else is read from it; `url_verification` gets its
 * challenge back; an `event_callback` is answered 200 as soon as the core has
 * it (events.ts: within Slack's 3 seconds whatever the turn takes), or 500
 * when it could not be taken, so Slack retries it. Slack's retries carry the
 * same `event_id` and are answered once. A GET answers 200 while it listens,
 * for a load balancer's health check. Several machines: every node serves this
 * endpoint with a handler that keeps events in the bridge's inbox (receiver.ts).
 */
import { readBody } from "../../../shared/http/read-body.js";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { Clock } from "../../../shared/clock.js";
import type { SlackChannelConfig } from "./config.js";
import type { EventVerdict } from "./events.js";
import { verifySlackRequest } from "./signature.js";

/** Slack's event payloads are small; a larger body is refused unread. */
const MAX_BODY = 1024 * 1024;

export interface EventsEndpointDeps {
  http: SlackChannelConfig["http"];
  signingSecret: string;
  clock: Clock;
  log: Logger;
  /** One verified `event_callback` (or other app event) body; resolves with what to answer. */
  handle(body: unknown, retry?: { num: number; reason: string }): Promise<EventVerdict>;
  /** One verified slash command (form fields); resolves with what to answer. */
  handleCommand(fields: Record<string, string>): Promise<EventVerdict>;
}

export interface EventsEndpoint {
  /** `http://host:port` as bound (the real port when 0 was asked for). */
  readonly url: string;
  /** Stops listening, then waits for requests under way (their events still reach the core, or come again). */
  close(): Promise<void>;
}

export async function listenForEvents(deps: EventsEndpointDeps): Promise<EventsEndpoint> {
  const inFlight = new Set<Promise<unknown>>();
  const server = createServer((req, res) => {
    const work = onRequest(deps, req, res).catch((error: unknown) => {
      deps.log.error({ err: error instanceof Error ? error.message : String(error) }, "slack events request failed");
      if (!res.headersSent) res.writeHead(500).end();
    });
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  await listen(server, deps.http);
  const address = server.address() as AddressInfo;
  return {
    url: `http://${deps.http.host.includes(":") ? `[${deps.http.host}]` : deps.http.host}:${address.port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await Promise.allSettled([...inFlight]);
      await closed;
    },
  };
}

function listen(server: Server, http: SlackChannelConfig["http"]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(http.port, http.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

async function onRequest(deps: EventsEndpointDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? "").split("?")[0];
  if (path !== deps.http.path) return void res.writeHead(404).end();
  // A load balancer's health check (several machines: every node listens, docs/cluster.md).
  if (req.method === "GET" || req.method === "HEAD") return void res.writeHead(200, { "content-type": "text/plain" }).end("slack events endpoint ready");
  if (req.method !== "POST") return void res.writeHead(405, { allow: "GET, HEAD, POST" }).end();
  const read = await readBody(req, { maxBytes: MAX_BODY });
  if (!read.ok) {
    if (read.reason === "too_large") res.writeHead(413).end();
    // Read no further.
    return void req.destroy();
  }
  const raw = read.body;
  const verdict = verifySlackRequest(
    { timestamp: header(req, "x-slack-request-timestamp"), signature: header(req, "x-slack-signature"), rawBody: raw },
    deps.signingSecret,
    deps.clock.now(),
  );
  if (!verdict.ok) {
    // Logged without the headers or body: a forged request says nothing worth keeping.
    deps.log.warn({ reason: verdict.reason }, "slack events request refused: not signed by Slack with this app's signing secret");
    return void res.writeHead(401, { "content-type": "text/plain" }).end(verdict.reason);
  }
  // A slash command comes form-encoded (its Request URL may be this one): answered with an empty 200, the reply follows as a message.
  if (header(req, "content-type")?.startsWith("application/x-www-form-urlencoded")) {
    const answer = await deps.handleCommand(Object.fromEntries(new URLSearchParams(raw.toString("utf8"))));
    if (answer === "ack") return void res.writeHead(200).end();
    return void res.writeHead(200, { "content-type": "text/plain" }).end("The bridge could not take the command just now: try again in a moment.");
  }
  const body = parseJson(raw);
  if (body === undefined) return void res.writeHead(400, { "content-type": "text/plain" }).end("body is not JSON");
  if (isUrlVerification(body)) {
    return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ challenge: body.challenge }));
  }
  const retryNum = header(req, "x-slack-retry-num");
  const retry = retryNum ? { num: Number(retryNum), reason: header(req, "x-slack-retry-reason") ?? "" } : undefined;
  const answer = await deps.handle(body, retry);
  if (answer === "ack") res.writeHead(200).end();
  else res.writeHead(500).end();
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return typeof v === "string" ? v : undefined;
};

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

function isUrlVerification(body: unknown): body is { type: "url_verification"; challenge: string } {
  return !!body && typeof body === "object" && "type" in body && body.type === "url_verification" && "challenge" in body && typeof body.challenge === "string";
}
