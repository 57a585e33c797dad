/**
 * The Signal platform's descriptor: channel schema, secrets, the `check`
 * probe (signal-cli's `/api/v1/check`, then one JSON-RPC call naming the
 * account) and a lazy adapter. Light on purpose: the adapter module loads
 * only in `create`.
 */
import { z } from "zod";
import { probe, type ProbeDeps } from "../../helpers/probe.js";
import { channelSubject, type CheckResult } from "../../vocabulary/check-result.js";
import { definePlatform, loadAdapterModule } from "../platform.js";
import { endpointOf, type SignalChannelConfig, signalChannelSchema, urlSecrets } from "./config.js";

const RpcAnswer = z.object({ result: z.unknown().optional(), error: z.object({ code: z.number(), message: z.string() }).optional() });

async function checkSignal(channel: SignalChannelConfig, deps: ProbeDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  const endpoint = endpointOf(channel.url);
  const alive = await probe(deps, `${endpoint.base}/api/v1/check`, { headers: endpoint.headers });
  if (alive.kind === "unreachable") {
    return {
      status: "fail",
      subject,
      message: `cannot reach the signal-cli daemon at ${endpoint.base} (${alive.reason})`,
      fix: `start it: signal-cli -a ${channel.account} daemon --http 127.0.0.1:8080 --receive-mode on-connection (or correct the channel's url)`,
    };
  }
  if (alive.status !== 200) {
    const hint = alive.status === 421 ? " (it refuses the Host header: reach it by the address it listens on)" : "";
    return {
      status: "fail",
      subject,
      message: `signal-cli's /api/v1/check answered HTTP ${alive.status}${hint}`,
      fix: "check the channel's url: it must be signal-cli's --http address",
    };
  }
  const body = JSON.stringify({ jsonrpc: "2.0", id: "check", method: "listGroups", params: { account: channel.account } });
  const rpc = await probe(deps, `${endpoint.base}/api/v1/rpc`, { method: "POST", headers: { ...endpoint.headers, "content-type": "application/json" }, body });
  if (rpc.kind === "unreachable")
    return { status: "fail", subject, message: `signal-cli's JSON-RPC did not answer (${rpc.reason})`, fix: "try again; check signal-cli's log" };
  const answer = RpcAnswer.safeParse(rpc.body);
  if (rpc.status === 200 && answer.success && !answer.data.error) {
    return { status: "ok", subject, message: `signal-cli daemon reachable, account ${channel.account} served` };
  }
  const said = answer.success && answer.data.error ? ` "${answer.data.error.message}"` : ` (HTTP ${rpc.status})`;
  return {
    status: "fail",
    subject,
    message: `signal-cli does not serve account ${channel.account}${said}`,
    fix: `register or link the account in signal-cli (signal-cli -a ${channel.account} register, or link), and run the daemon for it`,
  };
}

/** The adapter imports only the daemon's own dependencies (undici, eventsource-parser): no platform SDK exists. */
const libraries = {};
const loadAdapter = () => loadAdapterModule({ type: "signal", libraries }, () => import("./index.js"));

export const signalPlatform = definePlatform({
  type: "signal",
  name: "Signal",
  libraries,
  schema: signalChannelSchema,
  finalize: (channel, { id }): SignalChannelConfig => ({ ...channel, id }),
  secrets: (channel) => urlSecrets(channel.url),
  check: checkSignal,
  load: loadAdapter,
  async create(channel, deps) {
    const { createSignalAdapter } = await loadAdapter();
    return createSignalAdapter(channel, deps);
  },
});
