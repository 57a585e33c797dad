/**
 * Control-plane routes that are not JSON operations, so they are not in the
 * route table (`api.ts`): pages for a browser. Their handlers mount them by
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
} as const satisfies Record<string, PageSpec>;
