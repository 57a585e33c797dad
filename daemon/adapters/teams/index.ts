/**
 * Microsoft Teams through the Microsoft 365 Agents SDK (`@microsoft/agents-hosting`'s
 * ConnectorClient, `@microsoft/agents-activity`'s Activity), wired from its parts:
 * connection.ts serves the messaging endpoint and validates every request's token
 * (jwt.ts, keys from the OpenID metadata); inbound.ts translates; files.ts fetches
 * files; conversation-refs.ts keeps where each chat's replies go; outbound.ts
 * sends, edits (streaming), types and asks with Adaptive Card buttons, with the
 * bot's token from token.ts. Access, commands and retries are the core's.
 */
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { rawLength } from "../../vocabulary/adapter.js";
import { ANONYMOUS_MODE, CONNECTOR_SCOPE, type TeamsChannelConfig, tokenEndpointOf } from "./config.js";
import { TeamsConnection } from "./connection.js";
import { ConversationRefs } from "./conversation-refs.js";
import { type FetchJson, fetchJson, OpenIdKeys } from "./jwt.js";
import { FileOffers, TEAMS_FILE_LIMITS } from "./file-consent.js";
import { createTeamsOutbound, TEAMS_LIMITS } from "./outbound.js";
import { INFORMATIVE_TEXT, TeamsStreams } from "./streams.js";
import { createTokenSource } from "./token.js";

export { TEAMS_LIMITS } from "./outbound.js";

export interface TeamsAdapterOptions {
  /** Told where the messaging endpoint listens (its real port when 0 was configured). */
  onListening?(url: string): void;
  /** Longest one file download may take, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  /** How the OpenID metadata and keys are read. Default fetch. */
  fetchJson?: FetchJson;
  /** The informative update a turn starts with in a personal chat; "": a plain typing activity. Default INFORMATIVE_TEXT. */
  informativeText?: string;
}

export function createTeamsAdapter(config: TeamsChannelConfig, deps: AdapterDeps, options: TeamsAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ adapter: "teams", accountId: config.id });
  const anonymous = config.auth === ANONYMOUS_MODE;
  const tokens =
    anonymous || !config.app_password
      ? undefined
      : createTokenSource({
          endpoint: tokenEndpointOf(config),
          appId: config.app_id,
          appPassword: config.app_password,
          scope: CONNECTOR_SCOPE,
          clock: deps.clock,
        });
  const refs = new ConversationRefs(deps.state);
  const keys = new OpenIdKeys({ metadataUrl: config.openIdMetadata, fetchJson: options.fetchJson ?? fetchJson, clock: deps.clock });
  const outbound = createTeamsOutbound({
    refs,
    tokens,
    log,
    offers: new FileOffers(),
    streams: new TeamsStreams(deps.state, deps.clock),
    informativeText: options.informativeText ?? INFORMATIVE_TEXT,
  });
  const connection = new TeamsConnection({
    config,
    keys,
    refs,
    tokens,
    clock: deps.clock,
    log,
    attachmentTimeoutMs: options.attachmentTimeoutMs ?? 60_000,
    ...(options.onListening ? { onListening: options.onListening } : {}),
    ...(deps.inbox ? { inbox: deps.inbox } : {}),
    onFileConsent: (value) => outbound.consented(value),
  });
  return {
    platform: "teams",
    accountId: config.id,
    limits: { ...TEAMS_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? TEAMS_LIMITS.minEditIntervalMs },
    // The Bot Connector does not promise to post an activity again: every message is journaled or refused with a notice.
    redelivers: false,
    measure: rawLength,
    start: (sink) => connection.start(sink),
    stop: () => connection.stop(),
    send: (target, text, { format, final }) => outbound.send(target, text, format, final),
    edits: {
      edit: (target, messageId, text, { format, final }) => outbound.edit(target, messageId, text, format, final),
      // Teams' own streams (personal chats) are ended once a streamed reply is complete: the last edit, marked final.
      end: (target, messageId, text) => outbound.edit(target, messageId, text, "markdown", true),
      // A reply updated in place (a group chat, a channel) has nothing to end: no call, no wait.
      mayBeOpen: (messageId) => outbound.mayBeStream(messageId),
    },
    files: { limits: TEAMS_FILE_LIMITS, send: (target, file) => outbound.sendFile(target, file) },
    buttons: {
      ask: (target, question) => outbound.ask(target, question),
      close: (target, messageId, _question, outcome) => outbound.close(target, messageId, outcome),
    },
    sendTyping: (target) => outbound.typing(target),
  };
}
