/**
 * Prometheus metrics on a registry of their own (never prom-client's global
 * one), so several daemons, or tests, in one process do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface Metrics {
  registry: Registry;
  /** outcome: "ok", "error", "expired", "rejected", ... */
  turnsTotal: Counter<"instance" | "outcome">;
  /** From the message being accepted to the last reply piece sent. */
  turnLatencySeconds: Histogram<"instance">;
  queueDepth: Gauge<"instance">;
  /** reason: "timeout", "http_429", "http_5xx", "network", "instance_not_running", ... */
  retriesTotal: Counter<"instance" | "reason">;
  /** route: the route rule index, or the instance id; kind: what failed. */
  errorsTotal: Counter<"route" | "kind">;
  inboundMessagesTotal: Counter<"platform">;
  /** The Prometheus text exposition of everything registered. */
  text(): Promise<string>;
}

export interface MetricsOptions {
  /** Also collect Node process metrics (CPU, memory, event loop). Default false. */
  processMetrics?: boolean;
  /** Prefix for every metric name, e.g. "agent_bridge_". Default none. */
  prefix?: string;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const prefix = options.prefix ?? "";
  const registers = [registry];
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix });
  return {
    registry,
    turnsTotal: new Counter({
      name: `${prefix}turns_total`,
      help: "Turns finished, by instance and outcome.",
      labelNames: ["instance", "outcome"] as const,
      registers,
    }),
    turnLatencySeconds: new Histogram({
      name: `${prefix}turn_latency_seconds`,
      help: "Seconds from accepting a message to delivering its reply.",
      labelNames: ["instance"] as const,
      buckets: [0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
      registers,
    }),
    queueDepth: new Gauge({
      name: `${prefix}queue_depth`,
      help: "Turns waiting or running, by instance.",
      labelNames: ["instance"] as const,
      registers,
    }),
    retriesTotal: new Counter({
      name: `${prefix}retries_total`,
      help: "Retried service calls, by instance and reason.",
      labelNames: ["instance", "reason"] as const,
      registers,
    }),
    errorsTotal: new Counter({
      name: `${prefix}errors_total`,
      help: "Errors, by route (rule index or instance) and kind.",
      labelNames: ["route", "kind"] as const,
      registers,
    }),
    inboundMessagesTotal: new Counter({
      name: `${prefix}inbound_messages_total`,
      help: "Messages received from chat platforms, by platform.",
      labelNames: ["platform"] as const,
      registers,
    }),
    text: () => registry.metrics(),
  };
}
