/**
 * What the console reads that the `/v1` API does not give an outsider: every
 * organization with its keys (views only: never a hash or a secret), every
 * instance, sessions and their chains of turns, channels with a pending QR,
 * and the captured request bodies.
 */
import QRCode from "qrcode";
import { isoAt } from "../../shared/clock.js";
import type { z } from "zod";
import type { ConsoleAnswer as ConsoleAnswerSchema } from "../../shared/schemas/console.js";
import type { EmulatorEnv } from "../env.js";
import { notFound } from "../errors.js";
import { headKey } from "../store/state.js";
import { sessionHeader, sessionIdOf } from "../gateway/session-key.js";
import type { StoredResponse } from "../gateway/index.js";
import { usageOf } from "../gateway/wire.js";
import { CHANNELS } from "../channels/catalog.js";
import { redactText } from "../events/redact.js";
import type { InstanceRecord } from "../store/state.js";
import { instanceView, keyView, organizationView } from "../views.js";

const own = <T>(map: Record<string, T>, id: string): T | undefined => (Object.hasOwn(map, id) ? map[id] : undefined);

/** Longest chain walked (imported state may hold anything). */
const WALK_MAX = 100_000;

export function overview(env: EmulatorEnv) {
  const state = env.store.data;
  const now = env.clock.now();
  const instances = Object.values(state.instances)
    .filter((i) => i.status !== "terminated")
    .map((i) => instanceView(env, env.settle(i)))
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  const keys = Object.values(state.keys);
  const organizations = Object.values(state.organizations)
    .map((org) => ({
      ...organizationView(org),
      keys: keys.filter((k) => k.organization_id === org.id).map((k) => keyView(k, now)),
    }))
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
  return { version: env.settings.version, now: isoAt(now), organizations, instances };
}

export function liveInstance(env: EmulatorEnv, id: string): InstanceRecord {
  const instance = own(env.store.data.instances, id);
  if (!instance || instance.status === "terminated") throw notFound(`Instance ${id} not found.`);
  return instance;
}

type ConsoleAnswer = z.infer<typeof ConsoleAnswerSchema>;

/** A stored answer's items for the console: texts redacted, a structured output marked as JSON. */
function answerView(answer: NonNullable<StoredResponse["answer"]>): ConsoleAnswer {
  const isJson = (text: string) => {
    try {
      const value: unknown = JSON.parse(text);
      return typeof value === "object" && value !== null;
    } catch {
      return false;
    }
  };
  return {
    rule: answer.rule ?? null,
    status: answer.status,
    items: answer.items.map(itemView),
  };

  function itemView(item: (typeof answer.items)[number]): ConsoleAnswer["items"][number] {
    switch (item.type) {
      case "message":
        return { type: "message", text: redactText(item.text), json: isJson(item.text) };
      case "refusal":
        return { type: "refusal", refusal: redactText(item.refusal) };
      case "reasoning":
        return { type: "reasoning", summary: redactText(item.summary) };
      case "function_call":
        return { type: "function_call", call_id: item.call_id, name: item.name, arguments: redactText(item.arguments) };
    }
  }
}

export function turnView(r: StoredResponse) {
  return {
    id: r.id,
    session: sessionIdOf(r.session),
    previous_response_id: r.parent_id,
    input_text: redactText(r.input_text),
    output_text: redactText(r.output_text),
    model: r.model,
    created_at: isoAt(r.created_at * 1000),
    usage: usageOf(r.input_text, r.output_text),
    ...(r.answer ? { answer: answerView(r.answer) } : {}),
  };
}

/** The chain ending at `lastId`, oldest first: its last `limit` turns and how many there are. */
function chain(env: EmulatorEnv, lastId: string | null, limit: number) {
  const responses = env.store.data.gateway.responses;
  const newestFirst: StoredResponse[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (let id = lastId; id !== null && !seen.has(id) && total < WALK_MAX; ) {
    seen.add(id);
    const r = own(responses, id);
    if (!r) break;
    total++;
    if (newestFirst.length < limit) newestFirst.push(r);
    id = r.parent_id;
  }
  return { total, turns: newestFirst.reverse().map(turnView) };
}

export function sessions(env: EmulatorEnv, instanceId: string) {
  liveInstance(env, instanceId);
  const state = env.store.data.gateway;
  const prefix = `${instanceId}\u0000`;
  const out = [];
  for (const [key, headId] of Object.entries(state.heads)) {
    if (!key.startsWith(prefix)) continue;
    const head = own(state.responses, headId);
    if (!head) continue;
    out.push({
      session: sessionIdOf(key.slice(prefix.length)),
      head_id: headId,
      turns: chain(env, headId, 1).total,
      updated_at: isoAt(head.created_at * 1000),
      last_input: redactText(head.input_text.slice(0, 120)),
    });
  }
  // The newest first, and only so many: an instance with thousands of sessions must not make one huge page.
  return out.sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.session.localeCompare(b.session)).slice(0, SESSIONS_SHOWN);
}

/** Sessions listed per instance (the newest). */
export const SESSIONS_SHOWN = 200;

export function sessionTurns(env: EmulatorEnv, instanceId: string, session: string, limit: number) {
  liveInstance(env, instanceId);
  const heads = env.store.data.gateway.heads;
  const headId = own(heads, headKey(instanceId, sessionHeader(session))) ?? null;
  return { instance_id: instanceId, session, head_id: headId, ...chain(env, headId, limit) };
}

export function responseChain(env: EmulatorEnv, responseId: string, limit: number) {
  const r = own(env.store.data.gateway.responses, responseId);
  if (!r) throw notFound(`Response ${responseId} not found.`);
  return { instance_id: r.instance_id, session: sessionIdOf(r.session), response_id: r.id, ...chain(env, r.id, limit) };
}

/** Every catalog channel of the instance; an interactive one awaiting its scan carries the QR as a PNG data URL. */
export async function channels(env: EmulatorEnv, instanceId: string) {
  const instance = env.settle(liveInstance(env, instanceId));
  return Promise.all(
    CHANNELS.map(async (spec) => {
      const record = own(instance.channels, spec.channel);
      const qr = record?.enabled && record.qr_data !== undefined ? record.qr_data : undefined;
      return {
        channel: spec.channel,
        label: spec.label,
        connection_type: spec.connection_type,
        enabled: record?.enabled ?? false,
        connected: (record?.connected ?? false) && instance.status === "running",
        awaiting_scan: qr !== undefined,
        qr_png: qr === undefined ? null : await QRCode.toDataURL(qr, { errorCorrectionLevel: "M", margin: 2, scale: 4 }),
        connected_at: record?.connected_at ?? null,
        restarts: record?.restarts ?? 0,
      };
    }),
  );
}
