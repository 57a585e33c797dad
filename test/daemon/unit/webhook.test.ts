/**
 * The one webhook endpoint every HTTP platform listens with: what it answers
 * before the platform's handler sees anything, and what it awaits on close.
 */
import { request } from "node:http";
import { connect } from "node:net";
import pino from "pino";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { listenWebhook, textAnswer, type WebhookRequest } from "../../../daemon/adapters/webhook.js";

interface Sent {
  status: number;
  body: string;
}

function send(url: string, method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    // The endpoint may stop reading (413, a refused header): the status is what counts.
    req.on("error", reject);
    req.end(body);
  });
}

async function endpoint(options: Partial<Parameters<typeof listenWebhook>[0]> = {}): Promise<{ url: string; seen: WebhookRequest[] }> {
  const seen: WebhookRequest[] = [];
  const ep = await listenWebhook({
    host: "127.0.0.1",
    port: 0,
    path: "/hook",
    name: "test hook",
    log: pino({ level: "silent" }),
    handle: async (req) => {
      seen.push(req);
      return textAnswer(200, "taken");
    },
    ...options,
  });
  onTestFinished(() => ep.close());
  return { url: ep.url, seen };
}

describe("webhook endpoint", () => {
  it("hands the handler the raw bytes, the query and the headers, and answers what it says", async () => {
    const { url, seen } = await endpoint();
    const answer = await send(url, "POST", "/hook?x=1", Buffer.from([0x7b, 0x7d, 0xff]), { "x-sig": "abc" });
    expect(answer).toEqual({ status: 200, body: "taken" });
    expect(seen).toHaveLength(1);
    expect([...(seen[0]?.body ?? [])]).toEqual([0x7b, 0x7d, 0xff]);
    expect(seen[0]?.query.get("x")).toBe("1");
    expect(seen[0]?.header("X-Sig")).toBe("abc");
  });

  it("answers 404 off its path and 405 to other methods, without calling the handler", async () => {
    const { url, seen } = await endpoint();
    expect((await send(url, "POST", "/other", "{}")).status).toBe(404);
    expect((await send(url, "GET", "/hook")).status).toBe(405);
    expect((await send(url, "PUT", "/hook", "{}")).status).toBe(405);
    expect(seen).toHaveLength(0);
  });

  it("answers a load balancer's GET when asked to", async () => {
    const { url } = await endpoint({ health: "ready" });
    expect(await send(url, "GET", "/hook")).toEqual({ status: 200, body: "ready" });
  });

  it("refuses a body over the limit with 413, unread by the handler", async () => {
    const { url, seen } = await endpoint({ maxBytes: 16 });
    const answer = await send(url, "POST", "/hook", "x".repeat(64)).catch(() => ({ status: 413, body: "" }));
    expect(answer.status).toBe(413);
    expect(seen).toHaveLength(0);
  });

  it("refuses on the headers before reading the body when checkHeaders answers", async () => {
    const { url, seen } = await endpoint({ checkHeaders: (header) => (header("x-secret") === "s3" ? undefined : textAnswer(401)) });
    expect((await send(url, "POST", "/hook", "{}")).status).toBe(401);
    expect((await send(url, "POST", "/hook", "{}", { "x-secret": "s3" })).status).toBe(200);
    expect(seen).toHaveLength(1);
  });

  it("answers 500 when the handler throws, and logs no part of the request", async () => {
    const lines: string[] = [];
    const log = pino({ level: "trace" }, { write: (l: string) => void lines.push(l) });
    const { url } = await endpoint({
      log,
      handle: async () => {
        throw new Error("store down");
      },
    });
    expect((await send(url, "POST", "/hook", "secret-body-value")).status).toBe(500);
    expect(lines.join("")).toContain("store down");
    expect(lines.join("")).not.toContain("secret-body-value");
  });

  it("waits on close for a request under way, which still gets its answer", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => {
      entered = r;
    });
    const ep = await listenWebhook({
      host: "127.0.0.1",
      port: 0,
      path: "/hook",
      name: "test hook",
      log: pino({ level: "silent" }),
      handle: async () => {
        entered();
        await held;
        return textAnswer(200, "late");
      },
    });
    const answer = send(ep.url, "POST", "/hook", "{}");
    await inHandler;
    let closed = false;
    const closing = ep.close().then(() => {
      closed = true;
    });
    await Promise.resolve();
    expect(closed).toBe(false);
    release();
    expect(await answer).toEqual({ status: 200, body: "late" });
    await closing;
    expect(closed).toBe(true);
  });
});

describe("webhook endpoint: a platform that gave up waiting", () => {
  it("aborts the request's signal when the connection closes before the answer, and tells `sent` it was not written", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const outcomes: boolean[] = [];
    let signal: AbortSignal | undefined;
    const { url } = await endpoint({
      handle: async (req) => {
        signal = req.signal;
        await held;
        return { ...textAnswer(200, "too late"), sent: (written) => void outcomes.push(written) };
      },
    });
    const req = request(`${url}/hook`, { method: "POST" });
    req.on("error", () => undefined);
    req.end("{}");
    await vi.waitFor(() => expect(signal).toBeDefined());
    req.destroy();
    await vi.waitFor(() => expect(signal?.aborted).toBe(true));
    release();
    await vi.waitFor(() => expect(outcomes).toEqual([false]));
  });

  it("tells `sent` the answer was written when it was", async () => {
    const outcomes: boolean[] = [];
    const { url } = await endpoint({ handle: async () => ({ ...textAnswer(200, "here"), sent: (written) => void outcomes.push(written) }) });
    expect(await send(url, "POST", "/hook", "{}")).toEqual({ status: 200, body: "here" });
    await vi.waitFor(() => expect(outcomes).toEqual([true]));
  });
});

describe("webhook endpoint: a client that sends slowly", () => {
  /** A raw connection that writes `data` and then nothing more; resolves with what the server sent once it closed the connection. */
  function stall(url: string, data: string): Promise<string> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write(data));
      let answer = "";
      socket.on("data", (d: Buffer) => (answer += d.toString("latin1")));
      socket.on("error", reject);
      socket.on("close", () => resolve(answer));
    });
  }

  it("is cut off with 408 when its headers take longer than headersTimeoutMs, unseen by the handler", async () => {
    const { url, seen } = await endpoint({ headersTimeoutMs: 200, requestTimeoutMs: 400 });
    const answer = await stall(url, "POST /hook HTTP/1.1\r\nHost: x\r\nX-Half: ");
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(seen).toHaveLength(0);
  });

  it("is cut off with 408 when its body takes longer than requestTimeoutMs, unseen by the handler", async () => {
    const { url, seen } = await endpoint({ headersTimeoutMs: 200, requestTimeoutMs: 400 });
    const answer = await stall(url, 'POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":');
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(seen).toHaveLength(0);
  });
});
