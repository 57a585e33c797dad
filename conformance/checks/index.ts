/**
 * Every check, in the order they run: the preflight (a server, a key it
 * takes: else nothing runs), those that create nothing, then
 * the run's instance and what needs it, then what ends it.
 */
import type { Check } from "../check.js";
import { authChecks } from "./auth.js";
import { channelChecks } from "./channels.js";
import { fileChecks } from "./files.js";
import { instanceChecks } from "./instances.js";
import { keyChecks } from "./keys.js";
import { lifecycleChecks } from "./lifecycle.js";
import { messagingChecks } from "./messaging.js";
import { organizationChecks } from "./organization.js";
import { preflightCheck } from "./preflight.js";
import { skillChecks } from "./skills.js";

export const CHECKS: readonly Check[] = [
  preflightCheck,
  ...authChecks,
  ...organizationChecks,
  ...instanceChecks,
  ...keyChecks,
  ...messagingChecks,
  ...channelChecks,
  ...skillChecks,
  ...fileChecks,
  ...lifecycleChecks,
];
