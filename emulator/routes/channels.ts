/**
 * Messaging channels (docs/api-contract.md, "Channels") and the control plane's scan.
 *
 * Connect checks the config against the channel's catalog entry (a missing
 * field 422, a credential of the wrong form 400), writes `channels.<name>`
 * into `runtime.json` with every secret replaced by `<redacted>`, keeps only
 * fingerprints of secrets in the state, and counts a gateway restart. A token
 * channel is `connected` at once; WhatsApp answers `awaiting_scan` with a QR
 * (data and PNG) until `POST /_emulator/instances/{id}/channels/whatsapp/scan`.
 *
 * Decisions beyond the contract: connect and pair need a running instance
 * (409); pair also needs the channel enabled and connected (409); disconnect
 * of a channel never connected is a 409, otherwise idempotent; status and
 * list work in any instance state (`connected` is false unless running).
 * Channel info is public and the same for every instance id.
 */
import QRCode from "qrcode";
import { isoAt } from "../../shared/clock.js";
import type { EmulatorEnv } from "../env.js";
import { ApiError, conflict, notFound } from "../errors.js";
import type { Handlers } from "../http/router.js";
import type { ChannelRecord, InstanceRecord } from "../store/state.js";
import { fingerprint, REDACTED } from "../workspace/redact.js";
import { objectAt, type RuntimeConfigs } from "../workspace/runtime-config.js";
import { CHANNELS, type ChannelSpec, channelSpec } from "../channels/catalog.js";
import { checkConfig, isSecret } from "../rules/channels.js";
import { requireRunning } from "../http/guards.js";

type ChannelHandlers = Pick<
  Handlers,
  "listChannels" | "getChannelInfo" | "connectChannel" | "disconnectChannel" | "getChannelStatus" | "pairChannel" | "adminScan"
>;

/** WhatsApp-Web-shaped pairing data: a ref and three keys, from the emulator's randomness. */
export function qrData(random: EmulatorEnv["random"]): string {
  const b64 = (n: number) => random.bytes(n).toString("base64");
  return `2@${b64(24)},${b64(32)},${b64(32)},${b64(16)}`;
}

export function channelHandlers(env: EmulatorEnv, runtime: RuntimeConfigs): ChannelHandlers {
  const now = () => isoAt(env.clock.now());
  const recordOf = (instance: InstanceRecord, name: string): ChannelRecord | undefined =>
    Object.hasOwn(instance.channels, name) ? instance.channels[name] : undefined;

  function statusView(instance: InstanceRecord, spec: ChannelSpec) {
    const record = recordOf(instance, spec.channel);
    if (!record) {
      return { channel: spec.channel, enabled: false, connected: false, details: { connection_type: spec.connection_type, configured: false } };
    }
    return {
      channel: spec.channel,
      enabled: record.enabled,
      // A stopped instance runs no gateway, so nothing is connected.
      connected: record.enabled && record.connected && instance.status === "running",
      details: {
        connection_type: spec.connection_type,
        configured: true,
        dm_policy: "pairing",
        config: { ...record.config },
        awaiting_scan: record.qr_data !== undefined,
        connected_at: record.connected_at ?? null,
        paired_codes: record.paired_codes?.length ?? 0,
        gateway_restarts: record.restarts,
        last_restart_at: record.restarted_at,
        updated_at: record.updated_at,
      },
    };
  }

  return {
    listChannels: ({ instance }) =>
      CHANNELS.map((spec) => ({ channel: spec.channel, connection_type: spec.connection_type, enabled: recordOf(instance, spec.channel)?.enabled ?? false })),

    getChannelInfo({ params }) {
      const spec = channelSpec(params.channel);
      return {
        channel: spec.channel,
        connection_type: spec.connection_type,
        required_fields: Object.fromEntries(Object.entries(spec.fields).map(([key, f]) => [key, f.description])),
      };
    },

    async connectChannel({ instance, params, body }) {
      const spec = channelSpec(params.channel);
      requireRunning(instance);
      checkConfig(spec, body.config);
      const at = now();
      const stored: Record<string, string> = {};
      const written: Record<string, string> = {};
      for (const [key, value] of Object.entries(body.config)) {
        const secret = isSecret(spec, key);
        stored[key] = secret ? fingerprint(value) : value;
        written[key] = secret ? REDACTED : value;
      }
      const interactive = spec.connection_type === "interactive";
      const qr = interactive ? qrData(env.random) : undefined;
      const png = qr === undefined ? undefined : await QRCode.toBuffer(qr, { type: "png", errorCorrectionLevel: "M", margin: 2, scale: 4 });

      await runtime.update(instance.id, (config) => {
        // Built in this instance's turn, so a concurrent connect's restart is counted too.
        const previous = recordOf(instance, spec.channel);
        const record: ChannelRecord = {
          enabled: true,
          connected: !interactive,
          config: stored,
          ...(qr !== undefined ? { qr_data: qr } : { connected_at: at }),
          ...(previous?.paired_codes ? { paired_codes: previous.paired_codes } : {}),
          // Connecting rewrites the gateway's configuration: it restarts.
          restarts: (previous?.restarts ?? 0) + 1,
          restarted_at: at,
          updated_at: at,
        };
        // Config first, so the fixed keys always win over a config field of the same name.
        objectAt(config, "channels")[spec.channel] = { ...written, enabled: true, dmPolicy: "pairing" };
        return () => {
          instance.channels[spec.channel] = record;
          instance.updated_at = at;
          env.store.commit();
        };
      });

      if (qr === undefined)
        return { channel: spec.channel, status: "connected", message: `${spec.label} connected; the gateway restarted with the new configuration.` };
      return {
        channel: spec.channel,
        status: "awaiting_scan",
        qr_data: qr,
        qr_image_base64: png!.toString("base64"),
        message: `Scan the QR code with ${spec.label} (Settings > Linked devices) to finish pairing.`,
      };
    },

    async disconnectChannel({ instance, params }) {
      const spec = channelSpec(params.channel);
      if (!recordOf(instance, spec.channel)) throw conflict(`Channel '${spec.channel}' is not connected on this instance.`);
      const at = now();
      await runtime.update(instance.id, (config) => {
        const record = recordOf(instance, spec.channel)!;
        const channels = objectAt(config, "channels");
        const entry = objectAt(channels, spec.channel);
        entry.enabled = false;
        return () => {
          record.enabled = false;
          record.connected = false;
          delete record.qr_data;
          // The gateway restarts only if it runs; otherwise the change applies at the next start.
          if (instance.status === "running") {
            record.restarts += 1;
            record.restarted_at = at;
          }
          record.updated_at = at;
          instance.updated_at = at;
          env.store.commit();
        };
      });
    },

    getChannelStatus({ instance, params }) {
      return statusView(instance, channelSpec(params.channel));
    },

    pairChannel({ instance, params, body }) {
      const spec = channelSpec(params.channel);
      requireRunning(instance);
      const record = recordOf(instance, spec.channel);
      if (!record?.enabled) throw conflict(`Channel '${spec.channel}' is not enabled; connect it first.`);
      if (!record.connected) throw conflict(`Channel '${spec.channel}' is not connected yet (its QR code has not been scanned).`);
      const code = body.code.trim().toUpperCase();
      if (!/^[A-Z0-9-]{4,64}$/.test(code)) {
        throw new ApiError(422, [{ loc: ["body", "code"], msg: "A pairing code is 4 to 64 letters, digits or dashes", type: "string_pattern_mismatch" }]);
      }
      const codes = record.paired_codes ?? [];
      if (!codes.includes(code)) record.paired_codes = [...codes, code];
      record.updated_at = now();
      env.store.commit();
      return {
        channel: spec.channel,
        code,
        status: "approved",
        output: `Approved ${spec.channel} pairing code ${code}; the sender may now message the agent.\n`,
      };
    },

    adminScan({ params }) {
      const found = env.store.data.instances[params.instance_id];
      if (!found || found.status === "terminated") throw notFound(`Instance ${params.instance_id} not found.`);
      const instance = env.settle(found);
      const spec = channelSpec(params.channel);
      const record = recordOf(instance, spec.channel);
      if (!record?.enabled || record.qr_data === undefined) throw conflict(`Nothing awaits a scan on channel '${spec.channel}'.`);
      requireRunning(instance);
      const at = now();
      record.connected = true;
      record.connected_at = at;
      delete record.qr_data;
      record.updated_at = at;
      instance.updated_at = at;
      env.store.commit();
      return statusView(instance, spec);
    },
  };
}
