/**
 * The console's API (`/ui/api/...`): what the page reads and the few things
 * an operator does, each logged with who did it. Answers never carry a
 * secret: pairing requests come without their codes, events without message
 * text; a chat's text is in the one answer for that chat.
 */
import type { Logger } from "pino";
import QRCode from "qrcode";
import type { z } from "zod";
import type { Clock } from "../../../shared/clock.js";
import type { DaemonConfig } from "../../config/schema.js";
import { describeApproval, type PairingOps } from "../../core/pairing-ops.js";
import { hashCode } from "../../core/pairing.js";
import { nextReset, resetPolicyOf, startFreshSession } from "../../core/session-reset.js";
import { parseChatKey, sessionKeyOf } from "../../vocabulary/keys.js";
import type { Store } from "../../vocabulary/store.js";
import {
  OpsApproveBody,
  type OpsChat,
  type OpsChats,
  type OpsCluster,
  type OpsDone,
  type OpsFreshSession,
  type OpsLinks,
  type OpsOverview,
  type OpsPairing,
  OpsRevokeBody,
} from "../../../shared/schemas/ops-console.js";
import type { Metrics } from "../metrics.js";
import type { ActivityFeed, ChatRecord } from "./activity.js";
import { chatNamer, type ChatNamer } from "./chat-name.js";
import { platformName } from "../../adapters/platform-names.js";

export interface ConsoleDeps {
  config: DaemonConfig;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  feed: ActivityFeed;
  /** Each channel this node runs, with its adapter's last state. */
  channels(): { id: string; platform: string; state: string; detail?: string }[];
  /** Each routed instance's queue. */
  queues(): { instance: string; waiting: number; running: number }[];
  /** The instance's status at the service ("running", ...); rejects when the service cannot be reached. */
  instanceStatus(instanceId: string): Promise<string>;
  /** Set once the relay runs. */
  pairing(): PairingOps | undefined;
  /** Set once the store is open. */
  store(): Pick<Store, "session" | "setSession" | "holdSession"> | undefined;
  /** The channels that link by a scanned code (WhatsApp), with the code while one is shown. */
  links(): { channel: string; platform: string; state: string; linkCode: string | undefined }[];
  /** Stops the channel, forgets its link and starts it again; false when no such channel links. */
  relink(channel: string): Promise<boolean>;
  /** Several machines: this node's part (undefined on one machine). */
  cluster(): ClusterView | undefined;
  /** The running config's hash and last reload, as /healthz has them. */
  configState(): ConfigView;
}

/**
 * The config as the overview shows it. A refused reload's problems are config paths and what is
 * wrong there (never a value); `peers` is undefined on one machine.
 */
export interface ConfigView {
  hash: string;
  lastReload: { ok: true; at: number; hash: string; changed: boolean; restartNeeded: string[] } | { ok: false; at: number; problems: string[] } | undefined;
  /** Several machines: the other live nodes and the config hash each reported at the last heartbeat. */
  peers: readonly { node: string; hash: string }[] | undefined;
}

/** What the console reads and does of the cluster (cluster-node.ts, through the daemon). */
export interface ClusterView {
  nodeId: string;
  /** Who owns what and which nodes heartbeat, on the database's clock. */
  status(): Promise<{ leases: { unit: string; holder: string | null; epoch: number; expiresInMs: number }[]; nodes: { id: string; seenAgoMs: number }[] }>;
  /** The accounts this node owns, with how long it has. */
  owned(): { unit: string; epoch: number; ageMs: number }[];
  handOver(unit: string): Promise<boolean>;
}

/** A refusal or failure: its status and the contract's `{detail}` sentence. */
export interface Problem {
  status: number;
  body: { detail: string };
}
/** A console answer: 200 with what the route's schema (shared/schemas/ops-console.ts) describes, or a problem. */
export type Answer<T> = { status: 200; body: T } | Problem;

const ok = <T>(body: T): Answer<T> => ({ status: 200, body });
export const problem = (status: number, detail: string): Problem => ({ status, body: { detail } });
type In<S extends z.ZodType> = z.input<S>;

/** How long a reachability answer is reused: the overview reloads on every event. */
const REACH_TTL_MS = 5_000;
const REACH_TIMEOUT_MS = 3_000;

export class ConsoleApi {
  readonly #deps: ConsoleDeps;
  /** How a chat is named wherever the console lists one. */
  readonly nameOf: ChatNamer;
  /** The last reachability check per instance and when it was made; reused for REACH_TTL_MS. */
  readonly #reach = new Map<string, { at: number; answer: Promise<{ instance: string; reachable: boolean; status: string }> }>();

  constructor(deps: ConsoleDeps) {
    this.#deps = deps;
    this.nameOf = chatNamer(deps.config);
  }

  async overview(): Promise<Answer<In<typeof OpsOverview>>> {
    const d = this.#deps;
    const instances = [...new Set(d.config.routes.map((r) => r.instance))];
    const [turns, errors, service] = await Promise.all([
      d.metrics.turnsTotal.get(),
      d.metrics.errorsTotal.get(),
      Promise.all(instances.map((i) => this.#reachability(i))),
    ]);
    const byOutcome: Record<string, number> = {};
    for (const v of turns.values) byOutcome[String(v.labels.outcome)] = (byOutcome[String(v.labels.outcome)] ?? 0) + v.value;
    return ok({
      channels: d.channels().map((c) => ({ ...c, platformName: platformName(c.platform) })),
      queues: d.queues(),
      turnsPerMinute: d.feed.turnsPerMinute(),
      medianLatencyMs: d.feed.medianLatencyMs() ?? null,
      turns: byOutcome,
      errors: errors.values.reduce((sum, v) => sum + v.value, 0),
      service,
      config: this.#configSummary(),
      history: d.feed.history(),
    });
  }

  /** The hash, the last reload (a refused one with its problems) and, on several machines, the nodes that run another config. */
  #configSummary() {
    const { hash, lastReload, peers } = this.#deps.configState();
    const last = lastReload?.ok
      ? { ok: true as const, at: lastReload.at, hash: lastReload.hash, changed: lastReload.changed, restartNeeded: lastReload.restartNeeded }
      : lastReload;
    return { hash, lastReload: last ?? null, otherNodesDiffer: peers ? peers.filter((p) => p.hash !== hash) : null };
  }

  pairingList(): Answer<In<typeof OpsPairing>> {
    const pairing = this.#deps.pairing();
    if (!pairing) return problem(503, "The daemon is still starting.");
    return ok({ channels: this.#pairingChannels().map((c) => c.id), lists: pairing.list() });
  }

  async approve(body: unknown, actor: string): Promise<Answer<In<typeof OpsDone>>> {
    const parsed = OpsApproveBody.safeParse(body);
    if (!parsed.success) return problem(422, "Give the channel and the code the person was shown.");
    const pairing = this.#deps.pairing();
    if (!pairing) return problem(503, "The daemon is still starting.");
    const { channel, code } = parsed.data;
    if (!this.#pairingChannels().some((c) => c.id === channel)) return problem(404, `No channel "${channel}" here.`);
    const result = await pairing.approve(channel, hashCode(channel, code), actor);
    this.#deps.logger.info(
      { by: actor, channel, approved: result.ok ? result.user.userId : undefined },
      result.ok ? "pairing approved from the console" : "pairing approval from the console refused",
    );
    return result.ok ? ok({ text: describeApproval(result) }) : problem(result.reason === "rate_limited" ? 429 : 404, describeApproval(result));
  }

  async revoke(body: unknown, actor: string): Promise<Answer<In<typeof OpsDone>>> {
    const parsed = OpsRevokeBody.safeParse(body);
    if (!parsed.success) return problem(422, "Give the channel and the person's id.");
    const pairing = this.#deps.pairing();
    if (!pairing) return problem(503, "The daemon is still starting.");
    const { channel, user } = parsed.data;
    if (!this.#pairingChannels().some((c) => c.id === channel)) return problem(404, `No channel "${channel}" here.`);
    const done = await pairing.revoke(channel, user);
    this.#deps.logger.info({ by: actor, channel, userId: user, revoked: done }, "pairing revoke from the console");
    return done ? ok({ text: `Revoked ${user} on ${channel}.` }) : problem(404, `${user} is not approved on ${channel}.`);
  }

  chats(): Answer<In<typeof OpsChats>> {
    return ok({ chats: this.#deps.feed.chats().map((c) => ({ ...this.#chatSummary(c), turns: c.turns.length })) });
  }

  /** One chat with its last turns' text: the one answer that carries message text. */
  chat(rawKey: string, actor: string): Answer<In<typeof OpsChat>> {
    const chat = this.#chatOf(rawKey);
    if (!chat) return problem(404, "No such chat since this node started.");
    this.#deps.logger.info({ by: actor, platform: chat.platform, chatId: chat.chatId }, "chat opened in the console");
    return ok({ ...this.#chatSummary(chat), turns: chat.turns });
  }

  async freshSession(rawKey: string, actor: string): Promise<Answer<In<typeof OpsFreshSession>>> {
    const chat = this.#chatOf(rawKey);
    if (!chat) return problem(404, "No such chat since this node started.");
    const store = this.#deps.store();
    if (!store) return problem(503, "The daemon is still starting.");
    const sessionId = await startFreshSession(store, chat.route, chat);
    this.#deps.logger.info(
      { by: actor, platform: chat.platform, chatId: chat.chatId, instanceId: chat.route.instanceId },
      "conversation reset from the console",
    );
    this.#deps.feed.emit({
      type: "session",
      at: this.#deps.clock.now(),
      chat: {
        key: chat.key,
        platform: chat.platform,
        accountId: chat.accountId,
        chatId: chat.chatId,
        chatType: chat.chatType,
        ...(chat.threadId !== undefined ? { threadId: chat.threadId } : {}),
      },
      by: actor,
    });
    return ok({ sessionId });
  }

  /** Linking channels, each code drawn as a QR image (the code itself is never sent as text). */
  async links(): Promise<Answer<In<typeof OpsLinks>>> {
    const links = await Promise.all(
      this.#deps.links().map(async ({ linkCode, ...link }) => ({
        ...link,
        qr:
          linkCode === undefined
            ? null
            : `data:image/svg+xml;base64,${Buffer.from(await QRCode.toString(linkCode, { type: "svg", margin: 2 })).toString("base64")}`,
      })),
    );
    return ok({ links });
  }

  async relink(channel: string, actor: string): Promise<Answer<In<typeof OpsDone>>> {
    this.#deps.logger.info({ by: actor, channel }, "re-link asked from the console");
    return (await this.#deps.relink(channel))
      ? ok({ text: `Channel ${channel} forgot its link: scan the new code.` })
      : problem(404, `No channel "${channel}" links by a scanned code here.`);
  }

  /** Nodes, and each account's owner, fencing number and (on its owner) lease age; null on one machine. */
  async cluster(): Promise<Answer<In<typeof OpsCluster>>> {
    const cluster = this.#deps.cluster();
    if (!cluster) return ok({ cluster: null });
    const status = await cluster.status();
    const owned = new Map(cluster.owned().map((o) => [o.unit, o]));
    return ok({
      cluster: {
        node: cluster.nodeId,
        nodes: status.nodes,
        leases: status.leases.map((l) => ({ ...l, live: l.expiresInMs > 0, ageMs: owned.get(l.unit)?.ageMs ?? null })),
      },
    });
  }

  async handOver(unit: string, actor: string): Promise<Answer<In<typeof OpsDone>>> {
    const cluster = this.#deps.cluster();
    if (!cluster) return problem(404, "This daemon runs on one machine: there is nobody to hand over to.");
    this.#deps.logger.info({ by: actor, unit }, "hand-over asked from the console");
    return (await cluster.handOver(unit))
      ? ok({ text: `Handed ${unit} over: another node takes it.` })
      : problem(409, `This node does not own ${unit} now: open the console of the node that does.`);
  }

  #chatOf(rawKey: string): ChatRecord | undefined {
    const key = parseChatKey(rawKey);
    return key ? this.#deps.feed.chat(key) : undefined;
  }

  #chatSummary(chat: ChatRecord) {
    const d = this.#deps;
    const state = d.store()?.session(sessionKeyOf(chat.route));
    const policy = resetPolicyOf(d.config, chat.route.ruleIndex, chat.accountId);
    const next = state?.lastTurnAt !== undefined ? nextReset(policy, state.lastTurnAt) : undefined;
    return {
      key: chat.key,
      name: this.nameOf(chat),
      platform: chat.platform,
      accountId: chat.accountId,
      chatId: chat.chatId,
      chatType: chat.chatType,
      ...(chat.threadId !== undefined ? { threadId: chat.threadId } : {}),
      instance: chat.route.instanceId,
      session: { base: chat.route.sessionBase, generation: state?.generation ?? 0, chained: state?.lastResponseId !== undefined },
      lastAt: chat.lastAt,
      nextReset: next ? { at: next.at, reason: next.reason } : null,
    };
  }

  #pairingChannels() {
    return this.#deps.config.channels.filter((c) => c.access.mode === "pairing");
  }

  #reachability(instance: string): Promise<{ instance: string; reachable: boolean; status: string }> {
    const now = this.#deps.clock.now();
    const known = this.#reach.get(instance);
    if (known && now - known.at < REACH_TTL_MS) return known.answer;
    const answer = withTimeout(this.#deps.clock, this.#deps.instanceStatus(instance), REACH_TIMEOUT_MS).then(
      (status) => ({ instance, reachable: true, status }),
      // The error may name URLs or keys: the page gets a word, the log has the rest.
      () => ({ instance, reachable: false, status: "unreachable" }),
    );
    this.#reach.set(instance, { at: now, answer });
    return answer;
  }
}

function withTimeout<T>(clock: Clock, work: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(() => reject(new Error("timed out")), ms);
    work.then(
      (value) => {
        timer.cancel();
        resolve(value);
      },
      (error: unknown) => {
        timer.cancel();
        reject(error);
      },
    );
  });
}
