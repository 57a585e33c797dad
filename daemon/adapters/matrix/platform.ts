/**
 * The Matrix platform's descriptor: channel schema, secrets, the `check` probe (`account/whoami`
 * at the channel's homeserver: the token is accepted and belongs to `user_id`) and a lazy
 * adapter. Light on purpose: matrix-js-sdk loads only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { type MatrixChannelConfig, matrixChannelSchema } from "./config.js";

const Whoami = z.object({ user_id: z.string() });
const MatrixErrorBody = z.object({ errcode: z.string().optional(), error: z.string().optional() });

async function checkMatrix(channel: MatrixChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const got = await probe(deps, `${channel.homeserver}/_matrix/client/v3/account/whoami`, { headers: { authorization: `Bearer ${channel.access_token}` } });
  if (got.kind === "unreachable") {
    return {
      status: "fail",
      subject,
      message: `cannot reach the homeserver at ${channel.homeserver} (${got.reason})`,
      fix: "check the network, or the channel's homeserver URL",
    };
  }
  const me = Whoami.safeParse(got.body);
  if (got.status === 200 && me.success) {
    if (me.data.user_id !== channel.user_id) {
      return {
        status: "fail",
        subject,
        message: `the access token belongs to ${me.data.user_id}, not to ${channel.user_id}`,
        fix: `set user_id to ${me.data.user_id}, or use the bot user's own access token`,
      };
    }
    return { status: "ok", subject, message: `access token accepted (${me.data.user_id})` };
  }
  const error = MatrixErrorBody.safeParse(got.body);
  const said = error.success && error.data.errcode ? ` ${error.data.errcode}` : "";
  if (got.status === 401) {
    return {
      status: "fail",
      subject,
      message: `the homeserver does not accept the access token (401${said})`,
      fix: `log the bot user in again and put its access token in channel ${channel.id}'s access_token (or the variable it names)`,
    };
  }
  return {
    status: "fail",
    subject,
    message: `whoami failed (HTTP ${got.status}${said})`,
    fix: "try again later, or check the channel's homeserver URL (the client-server API's base)",
  };
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "matrix-js-sdk": "^37.5.0" };
const loadAdapter = () => loadAdapterModule({ type: "matrix", libraries }, () => import("./index.js"));

export const matrixPlatform = definePlatform({
  type: "matrix",
  libraries,
  schema: matrixChannelSchema,
  finalize: (channel, { id }): MatrixChannelConfig => ({ ...channel, id }),
  secrets: (channel) => [channel.access_token],
  check: checkMatrix,
  load: loadAdapter,
  async create(channel, deps) {
    const { createMatrixAdapter } = await loadAdapter();
    return createMatrixAdapter(channel, deps);
  },
});
