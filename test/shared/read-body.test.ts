import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { type BodyRead, readBody } from "../../shared/http/read-body.js";

/** A real server that reads each body with a 16-byte limit and reports what it got. */
async function serve(): Promise<{ url: string; reads: BodyRead[] }> {
  const reads: BodyRead[] = [];
  const server = createServer((req, res) => {
    void readBody(req, { maxBytes: 16 }).then((read) => {
      reads.push(read);
      res.writeHead(read.ok ? 200 : 413, { connection: "close" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, reads };
}

describe("readBody", () => {
  it("gives the bytes of a body within the limit", async () => {
    const { url, reads } = await serve();
    expect((await fetch(url, { method: "POST", body: "sixteen bytes ok" })).status).toBe(200);
    expect(reads[0]).toEqual({ ok: true, body: Buffer.from("sixteen bytes ok") });
  });

  it("refuses a body one byte over the limit, declared or streamed", async () => {
    const { url, reads } = await serve();
    expect((await fetch(url, { method: "POST", body: "seventeen bytes!!" })).status).toBe(413);
    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("0123456789"));
        controller.enqueue(new TextEncoder().encode("0123456789"));
        controller.close();
      },
    });
    const answer = await fetch(url, { method: "POST", body: streamed, duplex: "half" } as RequestInit).catch(() => undefined);
    if (answer) expect(answer.status).toBe(413);
    expect(reads.map((r) => (r.ok ? "ok" : r.reason))).toEqual(["too_large", "too_large"]);
  });
});
