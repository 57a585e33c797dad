/** Channels: the public catalog entry, refused connects, an interactive pairing started and disconnected. */
import { type Check, expectDetail, expectEmpty, expectInvalid, expectStatus, field, jsonArray, jsonObject, stringField, that } from "../check.js";

/** A value no channel accepts as a Telegram token; it must never be quoted back. */
const BAD_TOKEN = "conformance-not-a-telegram-token";
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export const channelChecks: readonly Check[] = [
  {
    id: "channels.info-public",
    title: "GET .../channels/{channel} needs no key and names the fields a connect needs; an unknown channel is 404",
    needs: ["instanceId"],
    async run({ call, facts }) {
      const ex = await call("getChannelInfo", { params: { instance_id: facts.instanceId!, channel: "telegram" }, key: null });
      expectStatus(ex, 200);
      const info = jsonObject(ex);
      that(info.connection_type === "token", `telegram's connection_type is ${JSON.stringify(info.connection_type)}`);
      that(typeof field(info.required_fields, "token") === "string", "telegram's required_fields do not name token");
      expectDetail(await call("getChannelInfo", { params: { instance_id: facts.instanceId!, channel: "conformance-pigeon" }, key: null }), 404);
    },
  },
  {
    id: "channels.list",
    title: "GET .../channels lists the catalog with enabled",
    needs: ["instanceId"],
    async run({ call, facts }) {
      const ex = await call("listChannels", { params: { instance_id: facts.instanceId! } });
      expectStatus(ex, 200);
      that(
        jsonArray(ex).some((c) => field(c, "channel") === "telegram"),
        "telegram is not in the catalog",
      );
    },
  },
  {
    id: "channels.connect-refused",
    title: "Connect without a required field is 422 at body.config.FIELD; a malformed credential is 400, never quoted back",
    needs: ["running"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId!, channel: "telegram" };
      expectInvalid(await call("connectChannel", { params, body: { config: {} } }), ["body", "config", "token"]);
      const bad = await call("connectChannel", { params, body: { config: { token: BAD_TOKEN } } });
      expectDetail(bad, 400);
      that(!bad.text.includes(BAD_TOKEN), "the 400 quotes the credential back");
    },
  },
  {
    id: "channels.interactive",
    title: "Connecting whatsapp answers awaiting_scan with QR data and a PNG; status shows it; pairing before the scan is 409; disconnect is 204",
    needs: ["running"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId!, channel: "whatsapp" };
      const ex = await call("connectChannel", { params, body: { config: {} } });
      expectStatus(ex, 200);
      const result = jsonObject(ex);
      that(result.status === "awaiting_scan", `status is ${JSON.stringify(result.status)}, expected awaiting_scan`);
      that(typeof result.qr_data === "string" && result.qr_data.length > 0, "no qr_data");
      const png = Buffer.from(stringField(result, "qr_image_base64") ?? "", "base64");
      that(png.subarray(0, 8).equals(PNG_SIGNATURE), "qr_image_base64 is not a PNG");
      const status = await call("getChannelStatus", { params });
      expectStatus(status, 200);
      that(field(status.json, "enabled") === true, "the channel's status is not enabled after connect");
      // Not scanned yet: a pairing code is refused until the channel is connected; an empty one fails the schema first.
      expectInvalid(await call("pairChannel", { params, body: { code: "" } }), ["body", "code"]);
      expectDetail(await call("pairChannel", { params, body: { code: "CONFORMANCE1" } }), 409);
      expectEmpty(await call("disconnectChannel", { params }));
    },
  },
  {
    id: "channels.disconnect-never-connected",
    title: "Disconnecting a channel never connected is 409",
    needs: ["running"],
    async run({ call, facts }) {
      expectDetail(await call("disconnectChannel", { params: { instance_id: facts.instanceId!, channel: "discord" } }), 409);
    },
  },
];
