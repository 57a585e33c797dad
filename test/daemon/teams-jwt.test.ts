/**
 * The Bot Framework token checks (daemon/adapters/teams/jwt.ts), one case per
 * refusal, with keys of the test's own: what the Bot Connector's docs require
 * of every request, and the key cache's refresh on an unknown key id.
 */
import { createSign, generateKeyPairSync, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BOT_FRAMEWORK_ISSUER, OpenIdKeys, verifyBotToken } from "../../daemon/adapters/teams/jwt.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";

const APP_ID = "00000000-0000-4000-8000-000000000b01";
const TENANT = "11111111-1111-4111-8111-111111111111";
const SERVICE_URL = "https://smba.trafficmanager.net/emea/";

function pair(kid: string, endorsements = ["msteams"]) {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: "jwk" }), kid, endorsements } };
}
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
function sign(claims: object, key: { kid: string; privateKey: KeyObject }, alg = "RS256"): string {
  const input = `${b64({ alg, kid: key.kid, typ: "JWT" })}.${b64(claims)}`;
  return `Bearer ${input}.${createSign("RSA-SHA256").update(input).sign(key.privateKey).toString("base64url")}`;
}

const good = pair("k1");
const stranger = pair("k1");
const now = () => Math.floor(Date.now() / 1000);
const claims = (over: object = {}) => ({ iss: BOT_FRAMEWORK_ISSUER, aud: APP_ID, exp: now() + 3600, nbf: now() - 10, serviceurl: SERVICE_URL, ...over });

function setup(published: { kid: string; jwk: object }[] = [good]) {
  const clock = createSteppableClock();
  const reads: string[] = [];
  let keys = published.map((p) => p.jwk);
  const keyring = new OpenIdKeys({
    metadataUrl: "https://login.example/openid",
    clock,
    fetchJson: async (url) => {
      reads.push(url);
      return url.endsWith("/openid") ? { jwks_uri: "https://login.example/keys" } : { keys };
    },
  });
  const verify = (authorization: string | undefined, over: { serviceUrl?: string; tenantId?: string; channelId?: string } = {}) =>
    verifyBotToken({ authorization, serviceUrl: over.serviceUrl ?? SERVICE_URL, channelId: over.channelId ?? "msteams" }, keyring, {
      appId: APP_ID,
      tenantId: over.tenantId,
      nowMs: clock.now(),
    });
  return {
    clock,
    reads,
    verify,
    publish: (p: { jwk: object }[]) => {
      keys = p.map((k) => k.jwk);
    },
  };
}

describe("a Bot Framework token", () => {
  it("is taken when signed by a published key for this bot, in time, for the activity's service URL", async () => {
    const { verify } = setup();
    expect(await verify(sign(claims(), good))).toMatchObject({ ok: true });
  });

  it.each([
    ["no header", undefined, "no Authorization header"],
    ["not a bearer JWT", "Basic abc", "not a Bearer JWT"],
    ["forged: signed by another key with the same id", sign(claims(), stranger), "bad signature"],
    ["expired beyond the five minutes' skew", sign(claims({ exp: now() - 6 * 60 }), good), "expired"],
    ["not valid yet", sign(claims({ nbf: now() + 10 * 60 }), good), "not valid yet"],
    ["for another bot", sign(claims({ aud: "99999999-0000-4000-8000-000000000000" }), good), "wrong audience"],
    ["from another issuer", sign(claims({ iss: "https://evil.example" }), good), "wrong issuer"],
    ["for another service URL", sign(claims({ serviceurl: "https://evil.example/" }), good), "serviceUrl"],
    ["without a service URL", sign(claims({ serviceurl: undefined }), good), "no serviceUrl"],
    ["with another algorithm", sign(claims(), good, "HS256"), "not RS256"],
  ])("is refused: %s", async (_what, authorization, reason) => {
    const { verify } = setup();
    const verdict = await verify(authorization);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain(reason);
  });

  it("is refused from another tenant when the bot is single-tenant", async () => {
    const { verify } = setup();
    const tenantIssuer = `https://login.microsoftonline.com/${TENANT}/v2.0`;
    expect(await verify(sign(claims({ iss: tenantIssuer, tid: TENANT }), good), { tenantId: TENANT })).toMatchObject({ ok: true });
    const other = await verify(sign(claims({ tid: "22222222-2222-4222-8222-222222222222" }), good), { tenantId: TENANT });
    expect(other).toMatchObject({ ok: false, reason: "wrong tenant" });
    // A tenant's own issuer is not taken for a multi-tenant bot.
    expect(await verify(sign(claims({ iss: tenantIssuer, tid: TENANT }), good))).toMatchObject({ ok: false, reason: "wrong issuer" });
  });

  it("is refused from the tenant's issuer when it does not vouch for the activity's service URL (the reply, with the bot's token, would go there)", async () => {
    const { verify } = setup();
    const tenantIssuer = `https://login.microsoftonline.com/${TENANT}/v2.0`;
    const noServiceUrl = sign(claims({ iss: tenantIssuer, tid: TENANT, serviceurl: undefined }), good);
    const verdict = await verify(noServiceUrl, { tenantId: TENANT, serviceUrl: "https://attacker.example/" });
    expect(verdict).toMatchObject({ ok: false, reason: "no serviceUrl claim" });
  });

  it("is refused when the key is not endorsed for the activity's channel", async () => {
    const webchatOnly = pair("k2", ["webchat"]);
    const { verify } = setup([webchatOnly]);
    expect(await verify(sign(claims(), webchatOnly))).toMatchObject({ ok: false, reason: expect.stringContaining("not endorsed") });
  });
});

describe("the signing keys", () => {
  it("are read once and cached, and read again when a token names a key not seen (a rollover), at most once a minute", async () => {
    const { verify, reads, publish, clock } = setup();
    await verify(sign(claims(), good));
    await verify(sign(claims(), good));
    expect(reads).toHaveLength(2);
    const rolled = pair("k-new");
    publish([good, rolled]);
    // Within the refresh floor of the first read: an unknown key is refused without a new read.
    expect(await verify(sign(claims(), rolled))).toMatchObject({ ok: false, reason: expect.stringContaining("does not list") });
    expect(reads).toHaveLength(2);
    clock.advance(61_000);
    expect(await verify(sign(claims(), rolled))).toMatchObject({ ok: true });
    expect(reads).toHaveLength(4);
    // A forged key id right after does not make it read again.
    expect(await verify(sign(claims(), pair("k-forged")))).toMatchObject({ ok: false });
    expect(reads).toHaveLength(4);
  });

  it("refuse every token while the metadata cannot be read", async () => {
    const keyring = new OpenIdKeys({ metadataUrl: "https://x/openid", clock: createSteppableClock(), fetchJson: () => Promise.reject(new Error("HTTP 503")) });
    const verdict = await verifyBotToken({ authorization: sign(claims(), good), serviceUrl: SERVICE_URL, channelId: "msteams" }, keyring, {
      appId: APP_ID,
      nowMs: Date.now(),
    });
    expect(verdict).toMatchObject({ ok: false, reason: expect.stringContaining("could not be read") });
  });
});
