/**
 * Several machines: the endpoint every node serves, whoever owns the account.
 * A request is verified as the owner's own endpoint would (connection.ts:
 * bearer token, size, JSON); an event is then kept in the bridge's inbox (one
 * row per message, so a repeat is one row) and Chat is answered empty only
 * once the row is committed (the reply follows through the API); when it
 * could not be kept, 503. The owner takes the rows (connection.ts `InboxIntake`).
 */
import type { Receiver, ReceiverDeps } from "../platform.js";
import { servedFilesOf } from "../file-links/index.js";
import { jsonAnswer } from "../webhook.js";
import { certsUrlOf, type GoogleChatChannelConfig } from "./config.js";
import { inboxKeyOf, listenForChat } from "./connection.js";
import { createCertCache } from "./verify.js";

export async function startGoogleChatReceiver(config: GoogleChatChannelConfig, deps: ReceiverDeps): Promise<Receiver> {
  const log = deps.logger.child({ adapter: "googlechat", accountId: config.id, role: "receiver" });
  const files =
    deps.fileStores &&
    servedFilesOf({ config: config.file_links, backend: deps.fileStores, platform: "googlechat", accountId: config.id, clock: deps.clock, log });
  await files?.open();
  const endpoint = await listenForChat({
    config,
    certs: createCertCache(certsUrlOf(config), deps.clock),
    log,
    async handle(body) {
      const key = inboxKeyOf(body);
      if (key === undefined) return jsonAnswer(200, {});
      try {
        await deps.keep(key, body);
        return jsonAnswer(200, {});
      } catch (error) {
        log.warn({ err: error instanceof Error ? error.message : String(error) }, "google chat event not kept (the database did not answer): answered 503");
        return jsonAnswer(503, { error: "not kept; try again" });
      }
    },
    routes: files ? [files.route] : [],
  });
  log.info({ url: `${endpoint.url}${config.http.path}` }, "google chat endpoint listening");
  return { close: () => endpoint.close().finally(() => files?.close()) };
}
