/**
 * Channels: the catalog of docs/api-contract.md ("Channels"), public channel info, connect
 * (token channels at once, WhatsApp through a QR and the control plane's
 * scan), credentials checked and never kept in clear, runtime.json as the
 * files API shows it, status, pair and disconnect.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import QRCode from "qrcode";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forceState, runningInstance, signupOrg, snapshot, startEmulator, type TestEmulator, type TestOrg } from "../helpers/emulator.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

let t: TestEmulator;
let org: TestOrg;

beforeAll(async () => {
  t = await startEmulator();
  org = await signupOrg(t.app, { tier: "lobster" });
});
afterAll(async () => {
  await t?.close();
});

/** A valid config for each token channel, and one credential of the wrong form. */
const VALID: Record<string, Record<string, string>> = {
  telegram: { token: TELEGRAM_BOT_TOKEN },
  discord: { token: "MTA4NzY1NDMyMTA5ODc2NTQzMg.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB" },
  slack: { bot_token: "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", app_token: "xapp-1-A0123456789-1234567890-abcdef0123456789" },
  signal: { account: "+15551234567" },
  matrix: { homeserver: "https://matrix.example.org", user_id: "@bot:example.org", access_token: "syt_Ym90_aBcDeFgHiJkLmNoP_0a1b2c" },
  mattermost: { bot_token: "abcdefghijklmnopqrstuvwxyz", base_url: "https://chat.example.com" },
  line: { channel_access_token: "dGhpcy1pcy1hLWxvbmctY2hhbm5lbC1hY2Nlc3MtdG9rZW4=", channel_secret: "0123456789abcdef0123456789abcdef" },
  googlechat: { audience_type: "project-number", audience: "123456789012" },
  msteams: { app_id: "11111111-2222-4333-8444-555555555555", app_password: "s3cr3t-pa55word", tenant_id: "66666666-7777-4888-9999-000000000000" },
};
const WRONG: Record<string, [string, string]> = {
  telegram: ["token", "123456789:short"],
  discord: ["token", "not-a-discord-token"],
  slack: ["bot_token", "xoxp-1234567890-user-token"],
  signal: ["account", "5550001111"],
  matrix: ["user_id", "bot@example.org"],
  mattermost: ["base_url", "ftp://chat.example.com"],
  line: ["channel_secret", "not-hex-not-hex-not-hex-not-hex!"],
  googlechat: ["audience", "https://not-a-number.example"],
  msteams: ["tenant_id", "not-a-uuid"],
};

async function fresh(name = "channels") {
  const id = (await runningInstance(t, org, { name })).id;
  const base = `/v1/instances/${id}/channels`;
  return {
    id,
    root: t.emulator.env.workspaces.rootOf(id),
    list: () => request(t.app).get(base).set(org.auth),
    info: (channel: string) => request(t.app).get(`${base}/${channel}`),
    connect: (channel: string, config: Record<string, unknown>) => request(t.app).post(`${base}/${channel}/connect`).set(org.auth).send({ config }),
    status: (channel: string) => request(t.app).get(`${base}/${channel}/status`).set(org.auth),
    pair: (channel: string, code: string) => request(t.app).post(`${base}/${channel}/pair`).set(org.auth).send({ code }),
    disconnect: (channel: string) => request(t.app).post(`${base}/${channel}/disconnect`).set(org.auth),
    scan: (channel: string) => request(t.app).post(`/_emulator/instances/${id}/channels/${channel}/scan`),
    /** runtime.json read through the files API, as a user of the service sees it. */
    runtime: async () => {
      const res = await request(t.app).get(`/v1/instances/${id}/files/content`).query({ path: "runtime.json" }).set(org.auth);
      expect(res.status).toBe(200);
      return { text: res.body.content as string, json: JSON.parse(res.body.content as string) as { channels: Record<string, Record<string, unknown>> } };
    },
  };
}

function allText(dir: string): string {
  let out = "";
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    out += statSync(full).isDirectory() ? allText(full) : readFileSync(full, "utf8");
  }
  return out;
}

describe("catalog", () => {
  it("lists exactly the contract's channels with their connection types, none enabled", async () => {
    const c = await fresh();
    const res = await c.list();
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { channel: "telegram", connection_type: "token", enabled: false },
      { channel: "discord", connection_type: "token", enabled: false },
      { channel: "slack", connection_type: "token", enabled: false },
      { channel: "whatsapp", connection_type: "interactive", enabled: false },
      { channel: "signal", connection_type: "token", enabled: false },
      { channel: "matrix", connection_type: "token", enabled: false },
      { channel: "mattermost", connection_type: "token", enabled: false },
      { channel: "line", connection_type: "token", enabled: false },
      { channel: "googlechat", connection_type: "token", enabled: false },
      { channel: "msteams", connection_type: "token", enabled: false },
    ]);
  });

  it("answers channel info without a key, with the contract's required fields", async () => {
    const c = await fresh();
    const fields: Record<string, string[]> = {
      telegram: ["token"],
      discord: ["token"],
      slack: ["bot_token", "app_token"],
      whatsapp: [],
      signal: ["account"],
      matrix: ["homeserver", "user_id", "access_token"],
      mattermost: ["bot_token", "base_url"],
      line: ["channel_access_token", "channel_secret"],
      googlechat: ["audience_type", "audience"],
      msteams: ["app_id", "app_password", "tenant_id"],
    };
    for (const [channel, names] of Object.entries(fields)) {
      const res = await c.info(channel);
      expect(res.status).toBe(200);
      expect(res.body.channel).toBe(channel);
      expect(res.body.connection_type).toBe(channel === "whatsapp" ? "interactive" : "token");
      expect(Object.keys(res.body.required_fields)).toEqual(names);
      for (const description of Object.values(res.body.required_fields)) expect(description).toMatch(/\S/);
    }
    const unknown = await c.info("irc");
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toMatch(/^Unknown channel 'irc'/);
    expect((await c.info("Telegram")).status).toBe(404);
  });
});

describe("connect a token channel", () => {
  it("connects Telegram; runtime.json (through the files API) has the channel, the token only redacted", async () => {
    const c = await fresh();
    const res = await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ channel: "telegram", status: "connected", message: expect.stringMatching(/restarted/) });
    const runtime = await c.runtime();
    expect(runtime.json.channels.telegram).toEqual({ token: "<redacted>", enabled: true, dmPolicy: "pairing" });
    expect(runtime.text).not.toContain(TELEGRAM_BOT_TOKEN);
    expect(runtime.text).not.toContain(TELEGRAM_BOT_TOKEN.split(":")[1]!.slice(0, 8));

    const status = await c.status("telegram");
    expect(status.body).toMatchObject({ channel: "telegram", enabled: true, connected: true });
    expect(status.body.details).toMatchObject({ connection_type: "token", dm_policy: "pairing", gateway_restarts: 1, awaiting_scan: false });
    expect(status.body.details.config.token).toMatch(/^<redacted:[0-9a-f]{12}>$/);
    expect((await c.list()).body.find((i: { channel: string }) => i.channel === "telegram").enabled).toBe(true);

    // Nowhere in clear: not in the state, not in any file, not in the answers.
    expect(JSON.stringify(await snapshot(t.app))).not.toContain(TELEGRAM_BOT_TOKEN);
    expect(allText(c.root)).not.toContain(TELEGRAM_BOT_TOKEN);
    expect(JSON.stringify(status.body)).not.toContain(TELEGRAM_BOT_TOKEN);
  });

  it("connects every token channel of the catalog with a valid config, secrets redacted", async () => {
    const c = await fresh();
    for (const [channel, config] of Object.entries(VALID)) {
      const res = await c.connect(channel, config);
      expect(res.status, `${channel}: ${res.text}`).toBe(200);
      expect(res.body.status).toBe("connected");
    }
    const runtime = await c.runtime();
    expect(Object.keys(runtime.json.channels).sort()).toEqual(Object.keys(VALID).sort());
    expect(runtime.json.channels.slack).toEqual({ bot_token: "<redacted>", app_token: "<redacted>", enabled: true, dmPolicy: "pairing" });
    expect(runtime.json.channels.matrix).toEqual({
      homeserver: "https://matrix.example.org",
      user_id: "@bot:example.org",
      access_token: "<redacted>",
      enabled: true,
      dmPolicy: "pairing",
    });
    expect(runtime.json.channels.msteams).toMatchObject({ app_id: VALID.msteams!.app_id, app_password: "<redacted>" });
    const secrets = [
      VALID.discord!.token,
      VALID.slack!.bot_token,
      VALID.slack!.app_token,
      VALID.matrix!.access_token,
      VALID.mattermost!.bot_token,
      VALID.line!.channel_access_token,
      VALID.line!.channel_secret,
      VALID.msteams!.app_password,
    ];
    const everything = allText(c.root) + JSON.stringify(await snapshot(t.app));
    for (const secret of secrets) expect(everything).not.toContain(secret!);
  });

  it("400 for a credential of the wrong form, without quoting it back; nothing written", async () => {
    const c = await fresh();
    const before = (await c.runtime()).text;
    for (const [channel, [field, value]] of Object.entries(WRONG)) {
      const res = await c.connect(channel, { ...VALID[channel], [field]: value });
      expect(res.status, channel).toBe(400);
      expect(res.body.detail).toMatch(new RegExp(`^Invalid .* ${field}: `));
      expect(res.body.detail).not.toContain(value);
    }
    expect((await c.connect("slack", { ...VALID.slack, app_token: "xoxb-1234567890-not-an-app-token" })).status).toBe(400);
    expect((await c.connect("googlechat", { audience_type: "app-url", audience: "https://chat.example.com/app" })).status).toBe(200);
    expect((await c.connect("googlechat", { audience_type: "somewhere", audience: "x" })).status).toBe(400);
    expect(JSON.parse((await c.runtime()).text).channels).toEqual({ googlechat: expect.any(Object) });
    expect(before).not.toContain("googlechat");
  });

  it("422 naming every missing field in loc; 422 without config; 404 for an unknown channel", async () => {
    const c = await fresh();
    const telegram = await c.connect("telegram", {});
    expect(telegram.status).toBe(422);
    expect(telegram.body.detail).toEqual([{ loc: ["body", "config", "token"], msg: expect.stringMatching(/^Field required/), type: "missing" }]);
    const slack = await c.connect("slack", { bot_token: VALID.slack!.bot_token, app_token: "  " });
    expect(slack.status).toBe(422);
    expect(slack.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([["body", "config", "app_token"]]);
    const matrix = await c.connect("matrix", {});
    expect(matrix.body.detail.map((d: { loc: string[] }) => d.loc[2])).toEqual(["homeserver", "user_id", "access_token"]);
    const noConfig = await request(t.app).post(`/v1/instances/${c.id}/channels/telegram/connect`).set(org.auth).send({});
    expect(noConfig.status).toBe(422);
    expect(noConfig.body.detail[0].loc).toEqual(["body", "config"]);
    expect((await c.connect("telegram", { token: 12345 })).status).toBe(422);
    expect((await c.connect("irc", { token: "x" })).status).toBe(404);
    expect((await c.runtime()).json.channels).toEqual({});
  });

  it("409 unless the instance is running", async () => {
    const c = await fresh();
    await forceState(t.app, c.id, { status: "stopped" });
    const res = await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN });
    expect(res.status).toBe(409);
    expect(res.body.detail).toBe("Instance is not running (status: stopped).");
    expect((await c.status("telegram")).body.enabled).toBe(false);
  });

  it("counts a gateway restart per connect and keeps extra config fields, secret-looking ones redacted", async () => {
    const c = await fresh();
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN }).expect(200);
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN, allow_from: "alice", webhook_secret: "hook-secret-123" }).expect(200);
    const status = await c.status("telegram");
    expect(status.body.details.gateway_restarts).toBe(2);
    const runtime = await c.runtime();
    expect(runtime.json.channels.telegram).toEqual({
      token: "<redacted>",
      allow_from: "alice",
      webhook_secret: "<redacted>",
      enabled: true,
      dmPolicy: "pairing",
    });
    expect(allText(c.root)).not.toContain("hook-secret-123");
  });
});

/** A minimal PNG reader: chunks, IHDR, inflated and unfiltered 8-bit rows. */
function decodePng(png: Buffer) {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  let offset = 8;
  let header: { width: number; height: number; bitDepth: number; colorType: number } | undefined;
  const idat: Buffer[] = [];
  const types: string[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString("latin1", offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    types.push(type);
    if (type === "IHDR") header = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), bitDepth: data[8]!, colorType: data[9]! };
    if (type === "IDAT") idat.push(data);
    offset += 12 + length;
  }
  expect(types[0]).toBe("IHDR");
  expect(types.at(-1)).toBe("IEND");
  const { width, height, bitDepth, colorType } = header!;
  expect(bitDepth).toBe(8);
  const channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[colorType as 0 | 2 | 4 | 6];
  expect(channels).toBeDefined();
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels!;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels! ? pixels[y * stride + x - channels!]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels! && y > 0 ? pixels[(y - 1) * stride + x - channels!]! : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter]!;
      pixels[y * stride + x] = (line[x]! + predictor) & 0xff;
    }
  }
  return { width, height, dark: (x: number, y: number) => pixels[y * stride + x * channels!]! < 128 };
}

/** Reads the module grid off the image and checks it is the QR symbol of `data` (at some error-correction level). */
function qrMatches(image: ReturnType<typeof decodePng>, data: string): boolean {
  let margin = -1;
  for (let d = 0; d < image.width && margin < 0; d++) if (image.dark(d, d)) margin = d;
  return (["L", "M", "Q", "H"] as const).some((level) => {
    const symbol = QRCode.create(data, { errorCorrectionLevel: level }).modules;
    const scale = (image.width - 2 * margin) / symbol.size;
    if (!Number.isInteger(scale) || scale < 1) return false;
    for (let row = 0; row < symbol.size; row++) {
      for (let col = 0; col < symbol.size; col++) {
        const px = margin + col * scale + Math.floor(scale / 2);
        const py = margin + row * scale + Math.floor(scale / 2);
        if (image.dark(px, py) !== (symbol.get(row, col) === 1)) return false;
      }
    }
    return true;
  });
}

describe("WhatsApp (interactive)", () => {
  it("answers awaiting_scan with QR data and a PNG of exactly that data", async () => {
    const c = await fresh();
    const res = await c.connect("whatsapp", {});
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("awaiting_scan");
    expect(res.body.qr_data).toMatch(/^2@[A-Za-z0-9+/=]+,[A-Za-z0-9+/=]+,[A-Za-z0-9+/=]+,[A-Za-z0-9+/=]+$/);
    const image = decodePng(Buffer.from(res.body.qr_image_base64 as string, "base64"));
    expect(image.width).toBe(image.height);
    expect(qrMatches(image, res.body.qr_data as string)).toBe(true);
    expect(qrMatches(image, `${res.body.qr_data as string}x`)).toBe(false);

    const status = await c.status("whatsapp");
    expect(status.body).toMatchObject({ enabled: true, connected: false, details: { awaiting_scan: true, connection_type: "interactive" } });
    expect((await c.runtime()).json.channels.whatsapp).toEqual({ enabled: true, dmPolicy: "pairing" });
  });

  it("a new pairing gets new QR data", async () => {
    const c = await fresh();
    const first = await c.connect("whatsapp", {});
    const second = await c.connect("whatsapp", {});
    expect(second.body.qr_data).not.toBe(first.body.qr_data);
  });

  it("the control plane's scan completes the pairing: connected; a second scan has nothing to do (409)", async () => {
    const c = await fresh();
    await c.connect("whatsapp", {}).expect(200);
    expect((await c.pair("whatsapp", "ABCD1234")).status).toBe(409);
    const scan = await c.scan("whatsapp");
    expect(scan.status).toBe(200);
    expect(scan.body).toMatchObject({ channel: "whatsapp", enabled: true, connected: true, details: { awaiting_scan: false } });
    expect((await c.status("whatsapp")).body.connected).toBe(true);
    const again = await c.scan("whatsapp");
    expect(again.status).toBe(409);
    expect(again.body.detail).toBe("Nothing awaits a scan on channel 'whatsapp'.");
    expect((await c.pair("whatsapp", "ABCD1234")).status).toBe(200);
  });

  it("scan: 409 for a channel with no pairing under way, 404 for an unknown instance or channel", async () => {
    const c = await fresh();
    expect((await c.scan("whatsapp")).status).toBe(409);
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN }).expect(200);
    expect((await c.scan("telegram")).status).toBe(409);
    expect((await c.scan("irc")).status).toBe(404);
    expect((await request(t.app).post("/_emulator/instances/00000000-0000-4000-8000-000000000000/channels/whatsapp/scan")).status).toBe(404);
  });

  it("draws the QR data from the emulator's randomness: the same seed gives the same QR", async () => {
    const qrOf = async () => {
      const e = await startEmulator({ seed: "qr-seed" });
      try {
        const o = await signupOrg(e.app);
        const instance = await runningInstance(e, o);
        const res = await request(e.app).post(`/v1/instances/${instance.id}/channels/whatsapp/connect`).set(o.auth).send({ config: {} });
        return res.body.qr_data as string;
      } finally {
        await e.close();
      }
    };
    expect(await qrOf()).toBe(await qrOf());
  });
});

describe("status, pair, disconnect", () => {
  it("status of a channel never connected; 404 for an unknown one", async () => {
    const c = await fresh();
    expect((await c.status("discord")).body).toEqual({
      channel: "discord",
      enabled: false,
      connected: false,
      details: { connection_type: "token", configured: false },
    });
    expect((await c.status("irc")).status).toBe(404);
  });

  it("pair approves a code on an enabled channel; 409 when not enabled, 422 for a malformed code", async () => {
    const c = await fresh();
    expect((await c.pair("telegram", "ABCD1234")).status).toBe(409);
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN }).expect(200);
    const res = await c.pair("telegram", " abcd1234 ");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ channel: "telegram", code: "ABCD1234", status: "approved", output: expect.stringContaining("ABCD1234") });
    await c.pair("telegram", "ABCD1234").expect(200);
    expect((await c.status("telegram")).body.details.paired_codes).toBe(1);
    expect((await c.pair("telegram", "no spaces!")).status).toBe(422);
    expect((await c.pair("telegram", "")).status).toBe(422);
    expect((await c.pair("irc", "ABCD1234")).status).toBe(404);
  });

  it("disconnect disables the channel and keeps its credentials; reconnect works", async () => {
    const c = await fresh();
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN }).expect(200);
    const fingerprint = (await c.status("telegram")).body.details.config.token as string;
    await c.disconnect("telegram").expect(204);
    const status = await c.status("telegram");
    expect(status.body).toMatchObject({ enabled: false, connected: false, details: { configured: true, gateway_restarts: 2 } });
    expect(status.body.details.config.token).toBe(fingerprint);
    expect((await c.runtime()).json.channels.telegram).toEqual({ token: "<redacted>", enabled: false, dmPolicy: "pairing" });
    expect((await c.list()).body.find((i: { channel: string }) => i.channel === "telegram").enabled).toBe(false);
    expect((await c.pair("telegram", "ABCD1234")).status).toBe(409);
    await c.disconnect("telegram").expect(204);
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN }).expect(200);
    expect((await c.status("telegram")).body).toMatchObject({ enabled: true, connected: true });
  });

  it("disconnect: 409 for a channel never connected, 404 for an unknown one; works on a stopped instance", async () => {
    const c = await fresh();
    const never = await c.disconnect("discord");
    expect(never.status).toBe(409);
    expect(never.body.detail).toBe("Channel 'discord' is not connected on this instance.");
    expect((await c.disconnect("irc")).status).toBe(404);
    await c.connect("telegram", { token: TELEGRAM_BOT_TOKEN }).expect(200);
    await forceState(t.app, c.id, { status: "stopped" });
    // Stopped: no gateway, so nothing is connected, but the channel stays enabled.
    expect((await c.status("telegram")).body).toMatchObject({ enabled: true, connected: false });
    await c.disconnect("telegram").expect(204);
    expect((await c.status("telegram")).body).toMatchObject({ enabled: false, details: { gateway_restarts: 1 } });
  });
});
