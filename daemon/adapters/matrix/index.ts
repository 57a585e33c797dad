/**
 * The Matrix adapter: matrix-js-sdk's client (its HTTP layer, errors and media upload) behind
 * the `ChatAdapter` interface. Wiring only:
 *
 * - events in: connection.ts (start, reconnect, stop) drives sync.ts (each `/sync` answer handed
 *   to the core; the `since` token kept only once all of it is taken), which translates events
 *   (inbound.ts) and fetches files (files.ts, the authenticated media endpoint);
 * - replies: outbound.ts (HTML `formatted_body`, replies, threads, edits, reactions, files);
 * - errors: errors.ts (the core's `SendError`).
 *
 * Why matrix-js-sdk and not @vector-im/matrix-bot-sdk: the bot SDK's crypto is a native module
 * downloaded at install time (blocked on machines without GitHub access, and loaded even without
 * encryption) and it downloads media from the unauthenticated endpoint current homeservers
 * refuse. matrix-js-sdk is the reference client (Element's), installs from the registry alone,
 * and is the library a person's client uses (the tests drive the other side with it).
 */
import { createClient } from "matrix-js-sdk";
import type { Logger as SdkLogger } from "matrix-js-sdk/lib/logger.js";
import type { Logger } from "pino";
import { cryptoRandom, type Random } from "../../../shared/random.js";
import type { AdapterDeps, ChatAdapter } from "../../vocabulary/adapter.js";
import { redactSecrets } from "../../vocabulary/redact.js";
import type { MatrixChannelConfig } from "./config.js";
import { MatrixConnection } from "./connection.js";
import { createMatrixOutbound, MATRIX_FILE_LIMITS, MATRIX_LIMITS } from "./outbound.js";
import { Syncer } from "./sync.js";

export { ENCRYPTED_NOTICE } from "./sync.js";
export { MATRIX_LIMITS } from "./outbound.js";

export interface MatrixAdapterOptions {
  /** The long poll's `timeout`, ms; tests use small ones. Default 30 000. */
  pollTimeoutMs?: number;
  /** The first pause after a failure (doubling up to 30 s), and after an answer not wholly taken. Default 1000 ms. */
  retryPauseMs?: number;
  /** Per attachment download, ms. Default 60 000. */
  attachmentTimeoutMs?: number;
  random?: Random;
}

export function createMatrixAdapter(config: MatrixChannelConfig, deps: AdapterDeps, options: MatrixAdapterOptions = {}): ChatAdapter {
  const log = deps.logger.child({ platform: "matrix", accountId: config.id });
  const scrub = (text: string) => redactSecrets(text, [config.access_token]);
  // The token goes in the Authorization header (never in a URL that could reach a log).
  const client = createClient({
    baseUrl: config.homeserver,
    accessToken: config.access_token,
    userId: config.user_id,
    useAuthorizationHeader: true,
    logger: sdkLogger(log, scrub),
  });
  const outbound = createMatrixOutbound({ client, userId: config.user_id, log, scrub });
  const syncer = new Syncer({
    client,
    state: deps.state,
    log,
    scrub,
    accountId: config.id,
    access: config.access,
    outbound,
    files: { homeserver: config.homeserver, accessToken: config.access_token, attachmentTimeoutMs: options.attachmentTimeoutMs ?? 60_000 },
    pollTimeoutMs: options.pollTimeoutMs ?? 30_000,
  });
  const connection = new MatrixConnection({
    client,
    userId: config.user_id,
    syncer,
    log,
    scrub,
    clock: deps.clock,
    random: options.random ?? cryptoRandom,
    retryPauseMs: options.retryPauseMs ?? 1000,
  });

  return {
    platform: "matrix",
    accountId: config.id,
    limits: { ...MATRIX_LIMITS, minEditIntervalMs: config.minEditIntervalMs ?? MATRIX_LIMITS.minEditIntervalMs },
    // An answer not wholly taken is asked for again with the same `since`.
    redelivers: true,
    measure: outbound.measure,
    start: (sink) => connection.start(sink),
    stop: () => connection.stop(),
    send: outbound.send,
    edits: { edit: outbound.edit },
    sendTyping: outbound.sendTyping,
    files: { limits: MATRIX_FILE_LIMITS, send: outbound.sendFile },
    reactions: { react: outbound.react },
  };
}

/** The SDK's own log lines (each request it makes) into the adapter's logger, at debug, scrubbed. */
function sdkLogger(log: Logger, scrub: (text: string) => string): SdkLogger {
  const line =
    (level: "trace" | "debug" | "warn") =>
    (...msg: unknown[]) =>
      log[level](scrub(msg.map(String).join(" ")));
  return { trace: line("trace"), debug: line("trace"), info: line("debug"), warn: line("warn"), error: line("warn"), getChild: () => sdkLogger(log, scrub) };
}
