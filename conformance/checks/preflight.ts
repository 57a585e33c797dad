/** Before anything else: is there a server, and is the key an organization key it accepts? Otherwise nothing else can say anything useful. */
import { type Check, expectStatus, field, that } from "../check.js";

export const preflightCheck: Check = {
  id: "preflight",
  title: "The server answers, and takes the key as an organization key",
  gate: true,
  async run({ call }) {
    const ex = await call("getOrganization");
    const detail = JSON.stringify(field(ex.json, "detail") ?? ex.text.slice(0, 200));
    that(ex.status !== 401, `the server does not accept the key (401: ${detail}): pass an organization key (svc_org_...) of this server`);
    that(ex.status !== 403, `the key is not an organization key, or it expired or was revoked (403: ${detail}): pass an organization key`);
    that(ex.status !== 404, `GET /v1/organization is 404: is --base-url the server's root (paths start with /v1)?`);
    expectStatus(ex, 200);
  },
};
