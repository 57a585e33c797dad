/**
 * Prometheus metrics on a registry of their own (never prom-client's global
 * one), so several daemons, or tests, in one process do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { InboundOutcome, RetryReason, ScheduleOutcome, TranscriptionOutcome, TurnOutcome } from "../core/relay-types.js";

export type { InboundOutcome, RetryReason, ScheduleOutcome, TranscriptionOutcome, TurnOutcome } from "../core/relay-types.js";

/** Every metric's name starts with this (and process metrics, when collected). */
export const METRICS_PREFIX = "agent_bridge_";

export interface Metrics {
  registry: Registry;
  /** outcome: a `TurnOutcome` ("answered", "failed", "expired", ...). */
  turnsTotal: Counter<"instance" | "outcome">;
  /** From the message being accepted to the last reply piece sent. */
  turnLatencySeconds: Histogram<"instance">;
  queueDepth: Gauge<"instance">;
  /** reason: a `RetryReason` ("network", "server", "not_running", "context_reset", "send"). */
  retriesTotal: Counter<"instance" | "reason">;
  /** route: the route rule index, or the instance id; kind: what failed. */
  errorsTotal: Counter<"route" | "kind">;
  /** outcome: an `InboundOutcome` ("accepted", "duplicate", "denied", "busy", ...). */
  inboundMessagesTotal: Counter<"platform" | "outcome">;
  /** Connections an adapter re-opened; reason: an `AdapterStatusEvent` reason ("deaf", "closed", "refresh", "other"). */
  adapterReconnectsTotal: Counter<"platform" | "account" | "reason">;
  /** Sends an adapter counts by kind (`AdapterDeps.countSend`: "reply" free, "push" against a quota). */
  adapterSendsTotal: Counter<"platform" | "account" | "kind">;
  /** Voice notes transcribed, by platform and outcome (a `TranscriptionOutcome`: "ok", "timeout", "failed", ...). */
  transcriptionsTotal: Counter<"platform" | "outcome">;
  /** Scheduled prompts by schedule and outcome (a `ScheduleOutcome`: "fired", "skipped", "silent", ...). */
  scheduledPromptsTotal: Counter<"schedule" | "outcome">;
  /** The agent's questions with buttons, by event (a `QuestionEvent`: "asked", "answered", "expired", "refused_tap", ...). */
  questionsTotal: Counter<"event">;
  /** Several machines: 1 while this node owns the account's lease, else 0. */
  leaseOwned: Gauge<"unit">;
  /** Several machines: the fencing number of the lease this node holds (it grows on every takeover). */
  leaseEpoch: Gauge<"unit">;
  /** Several machines: seconds since this node took the account (0 when it does not own it); read from `leaseAges` when scraped. */
  leaseAgeSeconds: Gauge<"unit">;
  /** Several machines: the accounts this node owns and how long it has owned each (set by the cluster node). */
  leaseAges: (() => readonly { unit: string; seconds: number }[]) | undefined;
  /** Several machines: accounts this node took (a start, a failover, a rebalance). */
  leaseAcquisitionsTotal: Counter<"unit">;
  /** Several machines: accounts this node lost or handed over; reason: "released", "lost". */
  leaseEndsTotal: Counter<"unit" | "reason">;
  /** Config reloads: result "applied" or "refused" (the file had problems; the running config stayed). */
  configReloadsTotal: Counter<"result">;
  /** 1 when the last reload applied (or none was asked), 0 when it was refused. */
  configLastReloadOk: Gauge;
  /** The Prometheus text exposition of everything registered. */
  text(): Promise<string>;
  /** Typed recorders: label values are the relay's own types, so the two cannot drift. */
  countInbound(platform: string, outcome: InboundOutcome): void;
  countTurn(instance: string, outcome: TurnOutcome, seconds: number): void;
  countRetry(instance: string, reason: RetryReason): void;
  countTranscription(platform: string, outcome: TranscriptionOutcome): void;
  countScheduled(schedule: string, outcome: ScheduleOutcome): void;
  countQuestion(event: string): void;
}

export interface MetricsOptions {
  /** Also collect Node process metrics (CPU, memory, event loop). Default false. */
  processMetrics?: boolean;
  /** Prefix for every metric name. Default `METRICS_PREFIX` ("agent_bridge_"). */
  prefix?: string;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const prefix = options.prefix ?? METRICS_PREFIX;
  const registers = [registry];
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix });
  const metrics: Metrics = {
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
      help: "Messages received from chat platforms, by platform and what became of them.",
      labelNames: ["platform", "outcome"] as const,
      registers,
    }),
    adapterReconnectsTotal: new Counter({
      name: `${prefix}adapter_reconnects_total`,
      help: "Connections a chat adapter re-opened, by platform, account and reason (deaf: up but no events came).",
      labelNames: ["platform", "account", "reason"] as const,
      registers,
    }),
    adapterSendsTotal: new Counter({
      name: `${prefix}adapter_sends_total`,
      help: "Messages a chat adapter sent, by platform, account and kind, where the kind matters (reply: free; push: counted against the account's quota).",
      labelNames: ["platform", "account", "kind"] as const,
      registers,
    }),
    transcriptionsTotal: new Counter({
      name: `${prefix}transcriptions_total`,
      help: "Voice notes and audio messages transcribed for the agent, by platform and outcome.",
      labelNames: ["platform", "outcome"] as const,
      registers,
    }),
    scheduledPromptsTotal: new Counter({
      name: `${prefix}scheduled_prompts_total`,
      help: "Slots of scheduled prompts, by schedule and what became of them (fired, skipped past the grace time, answered silently, ...).",
      labelNames: ["schedule", "outcome"] as const,
      registers,
    }),
    questionsTotal: new Counter({
      name: `${prefix}questions_total`,
      help: "The agent's questions with buttons: asked, answered, expired, closed unanswered (/stop, a message instead), taps refused, calls to tools not offered.",
      labelNames: ["event"] as const,
      registers,
    }),
    leaseOwned: new Gauge({ name: `${prefix}lease_owned`, help: "1 while this node owns the account's lease.", labelNames: ["unit"] as const, registers }),
    leaseEpoch: new Gauge({
      name: `${prefix}lease_epoch`,
      help: "Fencing number of the account's lease as this node last held it.",
      labelNames: ["unit"] as const,
      registers,
    }),
    leaseAgeSeconds: new Gauge({
      name: `${prefix}lease_age_seconds`,
      help: "Seconds since this node took the account (0 when it does not own it).",
      labelNames: ["unit"] as const,
      registers,
      collect() {
        for (const { unit, seconds } of metrics.leaseAges?.() ?? []) this.set({ unit }, seconds);
      },
    }),
    leaseAges: undefined,
    leaseAcquisitionsTotal: new Counter({
      name: `${prefix}lease_acquisitions_total`,
      help: "Accounts this node took: at start, by failover or by rebalance.",
      labelNames: ["unit"] as const,
      registers,
    }),
    leaseEndsTotal: new Counter({
      name: `${prefix}lease_ends_total`,
      help: "Accounts this node stopped owning: released (handed over) or lost (expired, taken over).",
      labelNames: ["unit", "reason"] as const,
      registers,
    }),
    configReloadsTotal: new Counter({
      name: `${prefix}config_reloads_total`,
      help: "Config reloads: applied, or refused because the file had problems (the running config stayed).",
      labelNames: ["result"] as const,
      registers,
    }),
    configLastReloadOk: new Gauge({
      name: `${prefix}config_last_reload_ok`,
      help: "1 when the last config reload applied (or none was asked), 0 when it was refused.",
      registers,
    }),
    text: () => registry.metrics(),
    countInbound: (platform, outcome) => metrics.inboundMessagesTotal.inc({ platform, outcome }),
    countTurn(instance, outcome, seconds) {
      metrics.turnsTotal.inc({ instance, outcome });
      if (outcome === "answered") metrics.turnLatencySeconds.observe({ instance }, seconds);
    },
    countRetry: (instance, reason) => metrics.retriesTotal.inc({ instance, reason }),
    countTranscription: (platform, outcome) => metrics.transcriptionsTotal.inc({ platform, outcome }),
    countScheduled: (schedule, outcome) => metrics.scheduledPromptsTotal.inc({ schedule, outcome }),
    countQuestion: (event) => metrics.questionsTotal.inc({ event }),
  };
  return metrics;
}
