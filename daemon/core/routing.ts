/**
 * Which instance answers a message, and under which session. The session id
 * is derived only from platform, account, chat, user and scope, so it is the
 * same after a restart, and its encoding is injective: two different people
 * (or groups) can never share one.
 */
import type { DaemonConfig, RouteConfig, RouteScope } from "../config/schema.js";
import type { InboundMessage } from "../vocabulary/adapter.js";
import { normalizeUserId, senderIds } from "./access.js";
import { encodeId } from "../vocabulary/keys.js";
import { directPartOf, groupPartOf } from "../vocabulary/conversation.js";

export interface ResolvedRoute {
  /** Index of the matching rule in `config.routes`. */
  ruleIndex: number;
  instanceId: string;
  /** The rule's model, else `service.defaultModel`. */
  model: string;
  instructions?: string;
  /** Effective scope: always "user" in direct chats; "user" in a group means "group_user". */
  scope: RouteScope;
  /** Stable session key, e.g. `telegram.bot1.group.-100123.user.42` (`...group.-100123.topic.7.user.42` in a forum topic). */
  sessionBase: string;
}

function matches(rule: RouteConfig, msg: InboundMessage): boolean {
  const m = rule.match;
  if (m.platform !== undefined && m.platform !== msg.platform) return false;
  if (m.accountId !== undefined && m.accountId !== msg.accountId) return false;
  if (m.chatType !== undefined && m.chatType !== msg.chatType) return false;
  if (m.chatId !== undefined && m.chatId !== msg.chatId) return false;
  if (m.userId !== undefined && !senderIds(msg).has(normalizeUserId(m.userId))) return false;
  return true;
}

/** First matching rule wins; undefined when none matches. */
export function resolveRoute(config: DaemonConfig, msg: InboundMessage): ResolvedRoute | undefined {
  const ruleIndex = config.routes.findIndex((rule) => matches(rule, msg));
  const rule = config.routes[ruleIndex];
  if (!rule) return undefined;
  const scope = effectiveScope(rule.scope, msg);
  const resolved: ResolvedRoute = {
    ruleIndex,
    instanceId: rule.instance,
    model: rule.model ?? config.service.defaultModel,
    scope,
    sessionBase: sessionBaseFor(msg, scope),
  };
  if (rule.instructions !== undefined) resolved.instructions = rule.instructions;
  return resolved;
}

/**
 * A direct chat has one person in it, so it is always per user. In a group,
 * "user" is read as per user within that group: sharing a person's private
 * context into a group would show it to everyone there.
 */
export function effectiveScope(scope: RouteScope | undefined, msg: Pick<InboundMessage, "chatType">): RouteScope {
  if (msg.chatType === "direct") return "user";
  return scope === "user" || scope === "group_user" ? "group_user" : "group";
}

/**
 * A thread (`threadId`) is a conversation of its own, so it is part of the
 * base (conversation.ts, the one thread rule); a chat's top level keeps the
 * base it always had (stored sessions carry on after an upgrade).
 */
export function sessionBaseFor(msg: Pick<InboundMessage, "platform" | "accountId" | "chatId" | "chatType" | "userId" | "threadId">, scope: RouteScope): string {
  const head = `${encodeId(msg.platform)}.${encodeId(msg.accountId)}`;
  // Raw ids, not normalised ones: the adapter gives each person one stable id,
  // and any merging here could put two people in one conversation.
  const user = encodeId(msg.userId);
  if (msg.chatType === "direct") return `${head}.dm.${user}${directPartOf(msg)}`;
  const group = `${head}.${groupPartOf(msg)}`;
  return scope === "group" ? group : `${group}.user.${user}`;
}

/** Generation 0 is the base; `/new` bumps the generation for a fresh conversation. */
export function sessionIdFor(base: string, generation: number): string {
  if (!Number.isSafeInteger(generation) || generation < 0) {
    throw new RangeError("generation must be a non-negative integer");
  }
  return generation === 0 ? base : `${base}.g${generation}`;
}
