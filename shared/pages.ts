/**
 * Control-plane routes that are not JSON operations, so they are not in the
 * route table (`api.ts`): pages for a browser and the events stream. Their handlers mount them by
 * these paths and the OpenAPI document describes them from here, under the
 * `emulator` tag, so they are written down once. (A page's form posting back
 * to its own URL answers a redirect, which OpenAPI linters expect as 2xx:
 * it is described in the page's text instead.)
 */
import type { HttpMethod } from "./api.js";

export interface PageSpec {
  method: HttpMethod;
  path: string;
  summary: string;
  description: string;
  /** Behind the control plane's access rule (loopback and Host, or the admin token); else guarded otherwise (see description). */
  admin?: true;
  /** Answers by status: its description and media type (no body schema: the body is for people). */
  responses: Record<number, { description: string; type?: string }>;
}

const BILLING = "/_emulator/billing/{session}";

export const pages = {
  billingPage: {
    method: "GET",
    path: BILLING,
    summary: "The billing page checkout and portal URLs open",
    description:
      "An HTML page with the organization's plan and buttons that switch it, standing in for the payment provider (no payment is taken). Guarded by its unguessable session id, like a hosted checkout link, not by the control plane's loopback rule or token, so a browser can open it. Its buttons post the form field `tier` back to the same URL, which switches the plan and redirects (303) to the page.",
    responses: { 200: { description: "The page", type: "text/html" }, 404: { description: "No such billing session", type: "text/plain" } },
  },
  consolePage: {
    method: "GET",
    path: "/_emulator/ui/{view}",
    summary: "The web console",
    description:
      "The web console's HTML page, for `/_emulator/ui/` and any path below it (each view has its own URL, e.g. `instances/{id}/sessions/{session}`); the page routes in the browser. Its modules are served under `/_emulator/ui/assets/` and `/_emulator/ui/vendor/` (Preact, htm). With an admin token, `?token=T` on any page URL sets an HttpOnly, SameSite=Strict cookie that stands in for the bearer and redirects (303) to the same page without it.",
    admin: true,
    responses: {
      200: { description: "The console's page", type: "text/html" },
      401: { description: "Not a loopback caller addressing a loopback host, or no admin token", type: "application/json" },
    },
  },
  events: {
    method: "GET",
    path: "/_emulator/events",
    summary: "The live events stream",
    description:
      "Server-sent events of everything that happens: `hello` once attached, `request` when a request finishes (no bodies), `state` when stored state changes (`replaced: true` for a reset or a snapshot import), `turn` when the gateway stores a turn (texts redacted, cut at 2,000 characters), `overflow` when this client fell behind and its backlog was dropped (refetch). A `: ping` comment every 15 s.",
    admin: true,
    responses: {
      200: { description: "The stream, until the client or the emulator closes it", type: "text/event-stream" },
      401: { description: "Not a loopback caller addressing a loopback host, or no admin token", type: "application/json" },
      503: { description: "Too many streams are open (100 by default)", type: "application/json" },
    },
  },
} as const satisfies Record<string, PageSpec>;
