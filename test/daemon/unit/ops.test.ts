import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { forThisTest } from "../../helpers/for-this-test.js";
import { startOpsServer, type HealthReport, type OpsServer } from "../../../daemon/ops/http.js";
import { createLogger } from "../../../daemon/ops/logger.js";
import { redactSecrets } from "../../../daemon/vocabulary/redact.js";
import { createMetrics } from "../../../daemon/ops/metrics.js";

function capture() {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) }, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("createLogger", () => {
  it("censors secret-bearing fields at any usual depth", () => {
    const out = capture();
    const log = createLogger({ level: "info", destination: out.destination });
    log.info(
      {
        token: "tok-1-value",
        service: { apiKey: "svc_org_key-value" },
        req: { headers: { authorization: "Bearer bearer-value", "x-api-key": "header-value" } },
        created: { raw_key: "svc_sk_raw-value" },
        keep: "visible",
      },
      "hello",
    );
    const text = out.lines.join("");
    for (const secret of ["tok-1-value", "svc_org_key-value", "bearer-value", "header-value", "svc_sk_raw-value"]) {
      expect(text).not.toContain(secret);
    }
    const [line] = out.parsed();
    expect(line).toMatchObject({ msg: "hello", keep: "visible", token: "[redacted]", service: { apiKey: "[redacted]" } });
  });

  it("scrubs the given secrets from messages and errors too", () => {
    const out = capture();
    const token = "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    const log = createLogger({ level: "debug", destination: out.destination, secrets: [token] });
    log.debug({ err: new Error(`GET https://api.telegram.org/bot${token}/getMe failed`) }, `using bot${encodeURIComponent(token)}`);
    const text = out.lines.join("");
    expect(text).not.toContain(token);
    expect(text).not.toContain(encodeURIComponent(token));
    expect(text).toContain("bot[redacted]/getMe");
  });

  it("honours the level", () => {
    const out = capture();
    const log = createLogger({ level: "warn", destination: out.destination });
    log.info("quiet");
    log.warn("loud");
    expect(out.parsed().map((l) => l.msg)).toEqual(["loud"]);
  });
});

describe("redactSecrets", () => {
  it("replaces every occurrence, longest secret first, and ignores very short ones", () => {
    expect(redactSecrets("a=abcdefgh b=abcdefghij c=abcdefgh", ["abcdefgh", "abcdefghij"])).toBe("a=[redacted] b=[redacted] c=[redacted]");
    expect(redactSecrets("id 12345 and abc", ["abc", "12345"])).toBe("id 12345 and abc");
    expect(redactSecrets('{"k":"se\\"cret!"}', ['se"cret!'])).toBe('{"k":"[redacted]"}');
  });
});

describe("createMetrics", () => {
  it("registers the daemon's metrics on a registry of its own", async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.turnsTotal.inc({ instance: "i1", outcome: "ok" });
    a.turnsTotal.inc({ instance: "i1", outcome: "ok" });
    a.turnLatencySeconds.observe({ instance: "i1" }, 1.5);
    a.queueDepth.set({ instance: "i1" }, 3);
    a.retriesTotal.inc({ instance: "i1", reason: "http_503" });
    a.errorsTotal.inc({ route: "0", kind: "timeout" });
    a.inboundMessagesTotal.inc({ platform: "telegram" });
    const text = await a.text();
    expect(text).toContain('turns_total{instance="i1",outcome="ok"} 2');
    expect(text).toContain('turn_latency_seconds_bucket{le="2",instance="i1"} 1');
    expect(text).toContain('turn_latency_seconds_count{instance="i1"} 1');
    expect(text).toContain('queue_depth{instance="i1"} 3');
    expect(text).toContain('retries_total{instance="i1",reason="http_503"} 1');
    expect(text).toContain('errors_total{route="0",kind="timeout"} 1');
    expect(text).toContain('inbound_messages_total{platform="telegram"} 1');
    // A second set starts at zero, and prom-client's global registry stays empty.
    expect(await b.text()).not.toContain('outcome="ok"');
    expect(await globalRegistry.getSingleMetric("turns_total")).toBeUndefined();
  });

  it("adds process metrics and a prefix when asked", async () => {
    const m = createMetrics({ processMetrics: true, prefix: "bridge_" });
    const text = await m.text();
    expect(text).toContain("bridge_process_cpu_user_seconds_total");
    expect(text).toContain("# TYPE bridge_turns_total counter");
  });
});

describe("startOpsServer", () => {
  let server: OpsServer | undefined;

  it("serves /healthz as 200 or 503 JSON as health changes, and /metrics as Prometheus text", async () => {
    const metrics = createMetrics();
    metrics.inboundMessagesTotal.inc({ platform: "terminal" });
    let report: HealthReport = { healthy: true, adapters: { terminal: "connected" } };
    server = forThisTest(await startOpsServer({ host: "127.0.0.1", port: 0, metrics, health: () => report }));
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    let res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(report);

    report = { healthy: false, adapters: { terminal: "stopped" } };
    res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual(report);

    res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(await res.text()).toContain('inbound_messages_total{platform="terminal"} 1');
  });

  it("answers 503 without details when the health check itself fails", async () => {
    server = forThisTest(
      await startOpsServer({
        host: "127.0.0.1",
        port: 0,
        metrics: createMetrics(),
        health: async () => {
          throw new Error("db password is hunter2");
        },
      }),
    );
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(503);
    const body = await res.text();
    expect(body).not.toContain("hunter2");
    expect(JSON.parse(body)).toEqual({ healthy: false, error: "health check failed" });
  });

  it("answers 404 elsewhere and 405 for other methods", async () => {
    server = forThisTest(await startOpsServer({ host: "127.0.0.1", port: 0, metrics: createMetrics(), health: () => ({ healthy: true }) }));
    expect((await fetch(`${server.url}/`)).status).toBe(404);
    const post = await fetch(`${server.url}/healthz`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${server.url}/healthz?verbose=1`)).status).toBe(200);
  });

  it("closes idempotently and frees the port", async () => {
    const s = await startOpsServer({ host: "127.0.0.1", port: 0, metrics: createMetrics(), health: () => ({ healthy: true }) });
    await Promise.all([s.close(), s.close()]);
    await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
  });

  it("rejects when the port is taken", async () => {
    server = forThisTest(await startOpsServer({ host: "127.0.0.1", port: 0, metrics: createMetrics(), health: () => ({ healthy: true }) }));
    const port = Number(new URL(server.url).port);
    await expect(startOpsServer({ host: "127.0.0.1", port, metrics: createMetrics(), health: () => ({ healthy: true }) })).rejects.toThrow(/EADDRINUSE/);
  });
});
