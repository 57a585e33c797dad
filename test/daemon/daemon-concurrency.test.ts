import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBridge, startService, tempDir, testConfig, type Service } from "./daemon-harness.js";

/**
 * A pass-through proxy in front of the emulator that counts, per instance,
 * how many message calls are in flight at once.
 */
function countingProxy(target: string) {
  const inFlight = new Map<string, number>();
  const max = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const m = /^\/v1\/instances\/([^/]+)\/session\/[^/]+\/responses$/.exec(req.url ?? "");
    const instance = req.method === "POST" ? m?.[1] : undefined;
    if (instance) {
      inFlight.set(instance, (inFlight.get(instance) ?? 0) + 1);
      max.set(instance, Math.max(max.get(instance) ?? 0, inFlight.get(instance)!));
    }
    let counted = !!instance;
    const done = () => {
      if (counted && instance) inFlight.set(instance, inFlight.get(instance)! - 1);
      counted = false;
    };
    const url = new URL(req.url ?? "/", target);
    const upstream = request(url, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      up.on("end", done);
    });
    upstream.on("error", () => {
      done();
      res.destroy();
    });
    res.on("close", done);
    req.pipe(upstream);
  });
  return {
    max,
    async listen(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let service: Service;
beforeAll(async () => {
  service = await startService({ instances: 3 });
});
afterAll(async () => {
  await service.close();
});

describe("daemon under load", () => {
  it("keeps each person's order with 50 people on 3 instances and never exceeds per-instance concurrency", async () => {
    const proxy = countingProxy(service.url);
    const proxyUrl = await proxy.listen();
    const dir = tempDir();
    const concurrency = 2;
    const config = testConfig({ ...service, url: proxyUrl }, dir.path, {
      queue: { debounceMs: 0, concurrencyPerInstance: concurrency, maxPendingPerSession: 10, maxPendingTotal: 1000 },
    });
    const { daemon, adapters } = await startBridge(config);
    try {
      // Users 0..49 spread over the three accounts, each routed to its own instance.
      const users = Array.from({ length: 50 }, (_, i) => ({ id: `u${i}`, chat: adapters[i % 3]! }));
      const perUser = ["!sleep 20", "second", "third"];
      await Promise.all(
        users.map(async (u) => {
          for (const text of perUser) await u.chat.inject({ userId: u.id, text: text === "!sleep 20" ? text : `${u.id} ${text}` });
        }),
      );
      await Promise.all(users.map((u) => u.chat.waitForReplies(u.id, 3, 30_000)));
      await daemon.whenIdle();
      for (const u of users) {
        expect(u.chat.repliesTo(u.id).map((r) => r.text)).toEqual(["slept 20", `You said: ${u.id} second`, `You said: ${u.id} third`]);
      }
      for (const id of service.instanceIds) expect(proxy.max.get(id)).toBe(concurrency);
    } finally {
      await daemon.stop({ graceMs: 0 });
      await proxy.close();
      dir.remove();
    }
  });
});
