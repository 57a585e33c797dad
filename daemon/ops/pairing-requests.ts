/**
 * The `agent-bridge pairing` requests, answered the same way by the running
 * daemon (through control-requests.ts) and by the command line itself when
 * no daemon runs: checked against the config's channels, carried out by the
 * pairing operations, and said as text for the person at the terminal.
 */
import type { ChannelConfig } from "../config/schema.js";
import { describeApproval, type PairingOps } from "../core/pairing-ops.js";
import { LeaseLostError } from "../vocabulary/state-errors.js";
import type { ControlResponse, PairingRequest } from "./control-requests.js";

export async function answerPairingRequest(
  ops: Omit<PairingOps, "approveFromChat">,
  channels: readonly ChannelConfig[],
  request: PairingRequest,
  /** Several machines: whether this node owns the channel now (its approvals live with it). Default: always. */
  owns: (channelId: string) => boolean = () => true,
): Promise<ControlResponse> {
  if (request.channel !== undefined && !channels.some((c) => c.id === request.channel)) {
    return { ok: false, error: `No channel "${request.channel}" in this config (channels: ${channels.map((c) => c.id).join(", ") || "none"}).` };
  }
  const elsewhere = `This node does not own channel ${request.channel ?? ""} now: run the command on the node that does (agent-bridge check names it), or use /approve from an owner's chat.`;
  if (request.channel !== undefined && !owns(request.channel)) return { ok: false, error: elsewhere };
  try {
    return await answerHere(ops, request);
  } catch (error) {
    // The account moved to another node while the request ran.
    if (error instanceof LeaseLostError) return { ok: false, error: elsewhere };
    throw error;
  }
}

async function answerHere(ops: Omit<PairingOps, "approveFromChat">, request: PairingRequest): Promise<ControlResponse> {
  switch (request.op) {
    case "pairing.approve": {
      const result = await ops.approve(request.channel, request.codeHash);
      return result.ok ? { ok: true, text: describeApproval(result) } : { ok: false, error: describeApproval(result) };
    }
    case "pairing.revoke":
      return (await ops.revoke(request.channel, request.user))
        ? { ok: true, text: `Revoked ${request.user} on ${request.channel}: their next message asks to pair again.` }
        : { ok: false, error: `${request.user} is not approved on ${request.channel}.` };
    case "pairing.list":
      return { ok: true, text: listText(ops.list(request.channel)) };
  }
}

const iso = (at: number) => new Date(at).toISOString().replace("T", " ").slice(0, 16);

/** One block per channel: who waits (never their code) and who was approved. */
function listText(channels: ReturnType<PairingOps["list"]>): string {
  if (!channels.length) return "No pairing requests and no approved users.";
  return channels
    .map(({ channel, pending, approved }) =>
      [
        `${channel}:`,
        ...pending.map(
          (p) => `  waiting   ${p.userId}${p.userName ? ` (${p.userName})` : ""}  asked ${iso(p.createdAt)} UTC, code expires ${iso(p.expiresAt)} UTC`,
        ),
        ...approved.map((a) => `  approved  ${a.userId}${a.userName ? ` (${a.userName})` : ""}  ${iso(a.at)} UTC by ${a.by}`),
      ].join("\n"),
    )
    .join("\n");
}
