/**
 * The page that checkout and portal URLs open: the plan, and buttons that
 * switch it, standing in for the payment provider. Guarded by the session id
 * in the URL (random, unguessable), as a hosted checkout link is.
 */
import express, { type Express } from "express";
import { isoAt } from "../shared/clock.js";
import { expressPath } from "../shared/api.js";
import { pages } from "../shared/pages.js";
import { TIER_LIMITS, TIERS, type Tier } from "../shared/schemas/common.js";
import type { EmulatorEnv } from "./env.js";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function mountBillingPage(app: Express, env: EmulatorEnv): void {
  const sessionOf = (id: string) => {
    const session = env.store.data.billing[id];
    const org = session && env.store.data.organizations[session.organization_id];
    return session && org ? { session, org } : undefined;
  };

  app.get(expressPath(pages.billingPage.path), (req, res) => {
    const found = sessionOf(String(req.params.session));
    if (!found) return void res.status(404).type("text/plain").send("This billing link is not valid.");
    const { session, org } = found;
    const rows = TIERS.map((tier) => {
      const current = tier === org.tier;
      const suggested = tier === session.tier;
      return `<li><strong>${tier}</strong>: up to ${TIER_LIMITS[tier]} instances ${
        current
          ? "<em>(current plan)</em>"
          : `<form method="post" style="display:inline"><input type="hidden" name="tier" value="${tier}"><button${suggested ? " autofocus" : ""}>Switch to ${tier}</button></form>`
      }</li>`;
    }).join("\n");
    res.type("html").send(`<!doctype html><html><head><meta charset="utf-8"><title>Billing · ${escapeHtml(org.name)}</title></head>
<body><h1>${session.kind === "checkout" ? "Checkout" : "Billing portal"}</h1>
<p>Organization <strong>${escapeHtml(org.name)}</strong>, plan <strong id="tier">${org.tier}</strong>, ${org.instance_ids.length} of ${TIER_LIMITS[org.tier]} instances in use.</p>
<ul>${rows}</ul><p><small>Emulated billing: no payment is taken.</small></p></body></html>`);
  });

  app.post(expressPath(pages.billingPage.path), express.urlencoded({ extended: false, limit: "4kb" }), (req, res) => {
    const found = sessionOf(String(req.params.session));
    if (!found) return void res.status(404).type("text/plain").send("This billing link is not valid.");
    const tier = (req.body as Record<string, unknown> | undefined)?.tier;
    if (typeof tier !== "string" || !(TIERS as readonly string[]).includes(tier)) {
      return void res.status(422).type("text/plain").send("Unknown plan.");
    }
    found.org.tier = tier as Tier;
    found.org.updated_at = isoAt(env.clock.now());
    env.store.commit();
    res.redirect(303, req.originalUrl);
  });
}
