/**
 * The validating proxy (`agent-bridge proxy --upstream URL`): forwards each
 * request to the upstream service and gives the client the upstream's answer
 * byte for byte, as it comes (a stream stays a stream). Once an answer is
 * complete it is checked against the contract (shared/contract) and, with a
 * recordings directory, written to the recording its request names
 * (`x-agent-bridge-recording`, else `default`). Checking and recording never
 * delay or change what the client gets.
 *
 * The request's steps: read the body, forward, relay the answer while keeping
 * a copy, then judge and record the copy.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { type Clock, systemClock } from "../../shared/clock.js";
import { type ContractValidator, createContractValidator, type Drift } from "../../shared/contract/index.js";
import { writeFileAtomic } from "../../shared/durable-files.js";
import { readBody } from "../../shared/http/read-body.js";
import { type Exchange, interactionOf } from "../recording/capture.js";
import { DEFAULT_RECORDING, RECORDING_HEADER } from "../recording/format.js";
import { createScrubber, type Scrubber } from "../recording/scrub.js";
import { readRecordingDir } from "../recording/read.js";
import { createRecordingWriter, recordingNameOf } from "../recording/store.js";
import { callUpstream, failureCode } from "../recording/upstream.js";
import { DriftCollector, type DriftReport, junitOf, summaryOf } from "./drift-report.js";

/** The proxy's own read-only endpoint: the drift report so far (every answer already sent judged), as JSON. */
export const REPORT_PATH = "/_proxy/report";
/** Set on the proxy's own 502 when the upstream could not be reached (never on an upstream's answer). */
export const PROXY_HEADER = "x-agent-bridge-proxy";

export interface ProxyOptions {
  /** The service to forward to, e.g. `https://api.example.com` (a path prefix is kept). */
  upstream: string;
  /** Write what passes through into recordings in this directory. */
  recordDir?: string;
  /** Values scrubbed from recordings and reports besides key-shaped ones. */
  secrets?: readonly string[];
  /** Written at `close()`: the report as JSON, as JUnit XML. */
  reportJson?: string;
  reportJunit?: string;
  validator?: ContractValidator;
  clock?: Clock;
  /** Longest wait for the upstream's answer headers, ms (default 120 000). */
  upstreamTimeoutMs?: number;
  /** Largest request body forwarded, bytes (default 64 MiB). */
  maxBodyBytes?: number;
}

export interface ValidatingProxy {
  listen(port?: number, host?: string): Promise<string>;
  readonly url: string;
  /** The report so far. */
  report(): DriftReport;
  /** Stops accepting, lets answers in flight finish, writes recordings and report files; resolves the final report. */
  close(): Promise<DriftReport>;
}

export function createValidatingProxy(options: ProxyOptions): ValidatingProxy {
  const upstream = new URL(options.upstream);
  const base = options.upstream.replace(/\/+$/, "");
  const clock = options.clock ?? systemClock;
  const validator = options.validator ?? createContractValidator();
  const scrub = createScrubber({ secrets: options.secrets ?? [] });
  const writer = options.recordDir ? createRecordingWriter(options.recordDir, { upstream: upstream.origin }) : undefined;
  const collector = new DriftCollector(upstream.origin, new Date(clock.now()).toISOString());
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 128, headersTimeout: options.upstreamTimeoutMs ?? 120_000, bodyTimeout: 0 });
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024;
  /** Judging and recording still running after their answer was sent. */
  const pending = new Set<Promise<void>>();
  let server: Server | undefined;
  let url: string | undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method === "GET" && req.url === REPORT_PATH) {
      // Every answer already sent is in it: their judging finishes first.
      await Promise.all(pending);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(collector.report()));
      return;
    }
    const read = await readBody(req, { maxBytes: maxBody });
    // A client that went away mid-body has nobody to answer.
    if (!read.ok && read.reason === "aborted") return;
    if (!read.ok) {
      res
        .writeHead(413, { "content-type": "application/json", [PROXY_HEADER]: "body-too-large" })
        .end(JSON.stringify({ detail: "Proxy: request body too large." }));
      return;
    }
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const seen = await forward(req, read.body, res, abort.signal);
    if (!seen) return;
    const work = judgeAndRecord(seen).catch((error: unknown) => {
      process.emitWarning(`proxy: could not record or judge ${seen.method} ${seen.url}: ${(error as Error).message}`);
    });
    pending.add(work);
    void work.finally(() => pending.delete(work));
  };

  /** Sends the request upstream and relays the answer as it comes; the copy of both, or undefined when the upstream did not answer. */
  const forward = async (req: IncomingMessage, body: Buffer, res: ServerResponse, signal: AbortSignal): Promise<Exchange | undefined> => {
    const method = req.method ?? "GET";
    try {
      const { exchange, broken } = await callUpstream({
        base,
        method,
        url: req.url ?? "/",
        headers: req.headers,
        body,
        dispatcher,
        signal,
        now: () => clock.now(),
        onHead: (status, headers) => void res.writeHead(status, headers),
        onChunk: (chunk) => (res.write(chunk) ? undefined : new Promise<void>((resolve) => res.once("drain", resolve).once("close", resolve))),
      });
      // The upstream broke the answer off: the client sees it broken off too, and what came is still judged.
      if (broken) res.destroy();
      else res.end();
      return exchange;
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return undefined;
      }
      const code = failureCode(error);
      const route = validator.matchRoute(method, pathOf(req.url))?.route ?? `${method} ${pathOf(req.url)}`;
      collector.unreachable(route, code);
      if (!signal.aborted) {
        res
          .writeHead(502, { "content-type": "application/json", [PROXY_HEADER]: "upstream-unreachable" })
          .end(JSON.stringify({ detail: `Proxy: the upstream ${upstream.origin} could not be reached (${code}).` }));
      }
      return undefined;
    }
  };

  const judgeAndRecord = async (seen: Exchange): Promise<void> => {
    const path = pathOf(seen.url);
    if (!path.startsWith("/v1/") || path === "/v1/openapi.json") return;
    collectDrift(seen, path, validator, collector, scrub);
    if (!writer) return;
    const interaction = interactionOf(seen, scrub);
    if (!interaction) return;
    const named = seen.requestHeaders[RECORDING_HEADER];
    await writer.append(recordingNameOf(Array.isArray(named) ? named[0] : named, DEFAULT_RECORDING), interaction);
  };

  return {
    async listen(port = 0, host = "127.0.0.1") {
      // A recording broken by hand is refused before anything is appended to it (a RecordingError names file and line).
      if (options.recordDir) await readRecordingDir(options.recordDir);
      server = createServer((req, res) => {
        handle(req, res).catch((error: unknown) => {
          if (!res.headersSent)
            res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ detail: `Proxy: ${(error as Error).message}` }));
          else res.destroy();
        });
      });
      await new Promise<void>((resolve, reject) => {
        server!.once("error", reject);
        server!.listen(port, host, () => resolve());
      });
      const address = server.address() as AddressInfo;
      url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
      return url;
    },
    get url() {
      if (!url) throw new Error("proxy: not listening");
      return url;
    },
    report: () => collector.report(),
    async close() {
      if (server) {
        const s = server;
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeIdleConnections();
        });
      }
      await Promise.all(pending);
      await writer?.flush();
      await dispatcher.close().catch(() => {});
      const report = collector.report();
      if (options.reportJson) await writeFileAtomic(options.reportJson, `${JSON.stringify(report, null, 2)}\n`, 0o644);
      if (options.reportJunit) await writeFileAtomic(options.reportJunit, junitOf(report), 0o644);
      return report;
    },
  };
}

export { summaryOf };

const pathOf = (url: string | undefined): string => (url ?? "/").split("?")[0]!;

/** Judges one exchange: the answer always; the request only when the upstream took it (else the client's error was answered as such). */
function collectDrift(seen: Exchange, path: string, validator: ContractValidator, collector: DriftCollector, scrub: Scrubber): void {
  const match = validator.matchRoute(seen.method, path);
  if (!match) {
    const label = `${seen.method.toUpperCase()} ${path}`;
    const known = seen.status === 404 || seen.status === 405;
    collector.exchange(
      label,
      known ? [] : [{ route: label, jsonPath: "route", expected: "a route of the contract", actual: `answered ${seen.status}`, kind: "route" }],
    );
    return;
  }
  const drifts: Drift[] = [];
  if (seen.status < 300) {
    const json = /json/i.test(String(seen.requestHeaders["content-type"] ?? ""));
    let body: unknown;
    if (json && seen.requestBody.length) {
      try {
        body = JSON.parse(seen.requestBody.toString("utf8"));
      } catch {
        body = undefined;
      }
    }
    const query = new URL(seen.url, "http://proxy").searchParams;
    drifts.push(...validator.checkRequest({ method: seen.method, route: match.template, headers: seen.requestHeaders, query, body }));
  }
  drifts.push(
    ...validator.checkResponseText({
      method: seen.method,
      route: match.template,
      status: seen.status,
      headers: seen.responseHeaders,
      text: seen.responseBody.toString("utf8"),
    }),
  );
  // What came back may hold a secret (a key in the wrong field): a report is stored too.
  collector.exchange(
    match.route,
    drifts.map((d) => ({ ...d, actual: scrub.text(d.actual) })),
  );
}
