/**
 * Checks the `service` and `routes` sections against the service itself:
 * the service answers, the key is accepted, and for each routed instance
 * that it exists, its status, and that the key holds the permissions the
 * config needs (`interact`; `files` with attachments on; `configure` with
 * autoStart).
 *
 * A scoped key cannot list its own grants (GET /v1/keys is for organization
 * keys), so each permission is probed with a request the service refuses
 * before doing anything: an invalid body or query. The service checks the
 * key and its grant first, so 422 means "allowed", 403 "not allowed", 404
 * "no such instance", and nothing is sent to the agent or changed.
 */
import type { DaemonConfig } from "../config/schema.js";
import { probe, type ProbeDeps, type ProbeOutcome } from "../helpers/probe.js";
import type { CheckResult } from "../vocabulary/check-result.js";

type Permission = "interact" | "files" | "configure" | "read";

const detailOf = (body: unknown): string => {
  if (body && typeof body === "object" && "detail" in body) {
    const d = (body as { detail: unknown }).detail;
    if (typeof d === "string") return d;
    if (d && typeof d === "object" && "error" in d && typeof d.error === "string") return d.error;
  }
  return "";
};

const STATUS_WORDS: Record<number, string> = {
  401: "401 Unauthorized",
  403: "403 Forbidden",
  404: "404 Not Found",
  500: "500 Internal Server Error",
  502: "502 Bad Gateway",
  503: "503 Service Unavailable",
};
const statusText = (status: number, body: unknown): string => {
  const detail = detailOf(body);
  return `${STATUS_WORDS[status] ?? `HTTP ${status}`}${detail ? ` "${detail}"` : ""}`;
};

/** Routes by instance, in config order, as `routes[0], routes[2]`. */
function instancesOf(config: DaemonConfig): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [i, r] of config.routes.entries()) out.set(r.instance, [...(out.get(r.instance) ?? []), i]);
  return out;
}

export async function checkService(config: DaemonConfig, deps: ProbeDeps): Promise<CheckResult[]> {
  const base = config.service.baseUrl;
  const orgKey = config.service.apiKey.startsWith("svc_org_");
  const headers = { authorization: `Bearer ${config.service.apiKey}`, "content-type": "application/json" };
  const call = (method: string, path: string, body?: unknown): Promise<ProbeOutcome> =>
    probe(deps, `${base}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const instPath = (id: string) => `/v1/instances/${encodeURIComponent(id)}`;
  const instances = instancesOf(config);
  const results: CheckResult[] = [];

  // 1. Reach the service and have the key accepted. A scoped key can only be
  // tried on an instance: the first routed one (its own problems are reported below).
  const first = instances.keys().next().value;
  const keyProbe = orgKey ? await call("GET", "/v1/organization") : first !== undefined ? await call("POST", `${instPath(first)}/responses`, {}) : undefined;
  const keyKind = orgKey ? "organization key" : "scoped key";
  if (!keyProbe) {
    results.push({ status: "warn", subject: "service", message: `not contacted: the config has no routes`, fix: "add a route to `routes`" });
    return results;
  }
  if (keyProbe.kind === "unreachable") {
    results.push({
      status: "fail",
      subject: "service",
      message: `cannot reach ${base} (${keyProbe.reason})`,
      fix: "start the service (or `agent-bridge emulator`), or correct service.baseUrl",
    });
    return results;
  }
  if (keyProbe.status === 401) {
    results.push({
      status: "fail",
      subject: "service",
      message: `${base} does not accept the API key (${statusText(401, keyProbe.body)})`,
      fix: "set service.apiKey to a key of this service (a typo, or a key of another service or emulator?)",
    });
    return results;
  }
  if (keyProbe.status === 403 && /revoked|expired/i.test(detailOf(keyProbe.body))) {
    results.push({
      status: "fail",
      subject: "service",
      message: `the API key is no longer valid (${statusText(403, keyProbe.body)})`,
      fix: "mint a new key (POST /v1/keys with an organization key) and put it in service.apiKey",
    });
    return results;
  }
  if (keyProbe.status >= 500) {
    results.push({
      status: "fail",
      subject: "service",
      message: `${base} answers with an error (${statusText(keyProbe.status, keyProbe.body)})`,
      fix: "try again later, or check the service's status",
    });
    return results;
  }
  results.push({ status: "ok", subject: "service", message: `${base} answers and accepts the ${keyKind}` });

  // 2. Each routed instance.
  for (const [id, routeIdx] of instances) {
    const subject = `instance ${id}`;
    const where = routeIdx.map((i) => `routes[${i}]`).join(", ");
    const notFound = (): CheckResult => ({
      status: "fail",
      subject,
      message: `not found on the service (used by ${where})`,
      fix: `correct the instance id in ${where}, or create the instance (GET /v1/instances lists the organization's instances)`,
    });

    if (orgKey) {
      const got = await call("GET", instPath(id));
      const r = instanceStatusResult(subject, got, where, config, true);
      results.push(r ?? notFound());
      continue;
    }

    // Scoped key: interact first; it also says whether the instance exists and is granted.
    const interact = await call("POST", `${instPath(id)}/responses`, {});
    const interactResult = permissionResult(subject, "interact", interact, where, "the bridge sends every message with it");
    if (interact.kind === "answer" && interact.status === 404) {
      results.push(notFound());
      continue;
    }
    if (interact.kind === "answer" && interact.status === 403 && /no access/i.test(detailOf(interact.body))) {
      results.push({
        status: "fail",
        subject,
        message: `the scoped key has no access to this instance (used by ${where})`,
        fix: "mint a key whose instance_ids include it, or route to an instance the key covers",
      });
      continue;
    }
    const status = await call("GET", `${instPath(id)}/status`);
    results.push(
      instanceStatusResult(subject, status, where, config, false) ??
        (status.kind === "answer" && status.status === 403
          ? { status: "ok", subject, message: "exists (status not readable: the key has no `read` permission, which the bridge does not need)" }
          : notFound()),
    );
    results.push(interactResult);
    if (config.attachments.enabled) {
      const files = await call("GET", `${instPath(id)}/files/content`);
      results.push(permissionResult(subject, "files", files, where, "attachments are on (attachments.enabled)", "or set attachments.enabled to false"));
    }
    if (config.service.autoStart) {
      const configure = await call("PATCH", instPath(id), { name: 0 });
      results.push(permissionResult(subject, "configure", configure, where, "service.autoStart is on", "or set service.autoStart to false"));
    }
  }
  return results;
}

/** An instance's existence and status from GET /v1/instances/{id}(/status); undefined for 404/403. */
function instanceStatusResult(subject: string, got: ProbeOutcome, where: string, config: DaemonConfig, orgKey: boolean): CheckResult | undefined {
  if (got.kind === "unreachable") return { status: "fail", subject, message: `no answer (${got.reason})`, fix: "check the service, then run the check again" };
  if (got.status === 404 || got.status === 403) return undefined;
  if (got.status !== 200)
    return { status: "fail", subject, message: `the service answered ${statusText(got.status, got.body)}`, fix: "check the service, then run the check again" };
  const status = got.body && typeof got.body === "object" && "status" in got.body && typeof got.body.status === "string" ? got.body.status : "unknown";
  const keyNote = orgKey ? " (organization key: every permission)" : "";
  switch (status) {
    case "running":
      return { status: "ok", subject, message: `exists and is running${keyNote}` };
    case "provisioning":
      return {
        status: "warn",
        subject,
        message: `exists and is still provisioning${keyNote}`,
        fix: "wait until it is running; messages wait for it meanwhile",
      };
    case "stopped":
      return config.service.autoStart
        ? { status: "ok", subject, message: `exists and is stopped; service.autoStart will start it on the first message${keyNote}` }
        : {
            status: "fail",
            subject,
            message: `exists but is stopped (used by ${where})${keyNote}`,
            fix: "start it (POST /v1/instances/{id}/start), or set service.autoStart to true with a key that has `configure`",
          };
    default:
      return {
        status: "fail",
        subject,
        message: `is in status "${status}" and cannot answer (used by ${where})${keyNote}`,
        fix: "delete and recreate the instance, or route to another one",
      };
  }
}

function permissionResult(subject: string, permission: Permission, got: ProbeOutcome, where: string, why: string, alternative = ""): CheckResult {
  if (got.kind === "unreachable")
    return { status: "fail", subject, message: `could not check \`${permission}\` (${got.reason})`, fix: "check the service, then run the check again" };
  if (got.status === 422 || got.status === 400 || got.status === 409 || (got.status >= 200 && got.status < 300)) {
    return { status: "ok", subject, message: `the key has \`${permission}\`` };
  }
  if (got.status === 403) {
    return {
      status: "fail",
      subject,
      message: `the key lacks \`${permission}\`, needed because ${why} (${where})`,
      fix: `mint a scoped key with \`${permission}\` on this instance and put it in service.apiKey${alternative ? `, ${alternative}` : ""}`,
    };
  }
  return {
    status: "fail",
    subject,
    message: `could not check \`${permission}\`: the service answered ${statusText(got.status, got.body)}`,
    fix: "check the service, then run the check again",
  };
}
