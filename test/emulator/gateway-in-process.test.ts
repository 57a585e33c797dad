/**
 * The emulator's hop to its own gateway runs in process (emulator/gateway/in-process.ts):
 * a burst of turns opens no connection into the emulator's own accept queue
 * (docs/architecture.md, "Whole-second waits"), and the in-memory connection
 * behaves as a TCP one where the gateway relies on it (half-close, destroy,
 * back-pressure).
 */
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplexPair } from "../../emulator/gateway/in-process.js";
import { createServiceClient } from "../../shared/client/index.js";
import { runningInstance, signupOrg, startEmulator, type TestEmulator } from "../helpers/emulator.js";
import { forThisTest } from "../helpers/for-this-test.js";

/** Established TCP connections whose local port is `port` (the server's ends), from the kernel's table. */
function establishedTo(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  let count = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (local?.endsWith(`:${hex}`) && state === "01") count++;
    }
  }
  return count;
}

describe("the emulator's own gateway hop", () => {
  let t: TestEmulator;
  let baseUrl: string;
  let apiKey: string;
  let instanceId: string;
  beforeAll(async () => {
    t = await startEmulator({ provisionMs: 0 });
    baseUrl = await t.emulator.listen(0, "127.0.0.1");
    const org = await signupOrg(t.app);
    apiKey = org.apiKey;
    instanceId = (await runningInstance(t, org)).id;
  });
  afterAll(() => t?.close());

  it("relays a burst of turns on connections of their own without opening one TCP connection to the gateway", async () => {
    const gatewayPort = Number(new URL(t.emulator.gateway.url).port);
    const clients = Array.from({ length: 20 }, () => {
      const dispatcher = forThisTest(new Agent({ connections: 1 }));
      return createServiceClient({ baseUrl, apiKey, dispatcher });
    });
    const answers = await Promise.all(
      clients.map((api, i) => api.createSessionResponse({ instance_id: instanceId, session_id: `burst-${i}`, body: { model: "m", input: `hello ${i}` } })),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => "completed"));
    // The API's 20 connections are TCP; the gateway's listening socket took none.
    expect(establishedTo(gatewayPort)).toBe(0);
    expect(establishedTo(Number(new URL(baseUrl).port))).toBeGreaterThanOrEqual(20);
  });

  it("streams an answer through the in-process hop, delta by delta", async () => {
    const api = createServiceClient({ baseUrl, apiKey, dispatcher: forThisTest(new Agent()) });
    const deltas: string[] = [];
    for await (const event of api.streamSessionResponse({ instance_id: instanceId, session_id: "streamed", body: { model: "m", input: "stream me" } })) {
      if (event.type === "response.output_text.delta") deltas.push(event.delta);
    }
    expect(deltas.join("")).toContain("stream me");
  });
});

describe("duplexPair", () => {
  it("carries writes both ways; an end is read as the end of input, and the other side may still write", async () => {
    const [a, b] = duplexPair();
    const got: string[] = [];
    b.on("data", (chunk: Buffer) => got.push(chunk.toString()));
    const ended = once(b, "end");
    a.write("one ");
    a.end("two");
    await ended;
    expect(got.join("")).toBe("one two");
    const back = once(a, "data");
    b.write("reply");
    expect(String((await back)[0])).toBe("reply");
  });

  it("a side destroyed ends and closes the other, whose writes then fail with EPIPE", async () => {
    const [a, b] = duplexPair();
    const closed = once(a, "close");
    a.resume();
    b.destroy();
    await closed;
    expect(a.destroyed).toBe(true);
    const [c, d] = duplexPair();
    d.destroy();
    c.on("error", () => {});
    const failed = new Promise<NodeJS.ErrnoException | null | undefined>((resolve) => c.write("late", resolve));
    expect((await failed)?.code).toBe("EPIPE");
  });

  it("holds a writer while the reader does not read (back-pressure), and lets it go on once it reads", async () => {
    const [a, b] = duplexPair();
    const big = Buffer.alloc(64 * 1024, 1);
    let writable = true;
    for (let i = 0; i < 8 && writable; i++) writable = a.write(big);
    expect(writable).toBe(false);
    const drained = once(a, "drain");
    b.resume();
    await drained;
  });
});
