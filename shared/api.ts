/**
 * The route table: the one place each `/v1` operation is described. The
 * emulator registers its handlers against it and validates with its schemas,
 * the OpenAPI document is built from it, and the typed client is derived from it.
 */
import type { z } from "zod";
import * as admin from "./schemas/admin.js";
import * as channels from "./schemas/channels.js";
import * as consoleSchemas from "./schemas/console.js";
import type { Permission } from "./schemas/common.js";
import * as files from "./schemas/files.js";
import { Har } from "./schemas/har.js";
import * as instances from "./schemas/instances.js";
import * as keys from "./schemas/keys.js";
import * as modelScript from "./schemas/model-script.js";
import * as org from "./schemas/organization.js";
import * as responses from "./schemas/responses.js";
import * as recordings from "./schemas/recordings.js";
import * as sandboxes from "./schemas/sandboxes.js";
import * as skills from "./schemas/skills.js";
import { z as zod } from "zod";
import { MAX_JSON_DEPTH } from "./json-depth.js";

export type Access =
  | { kind: "public" }
  | { kind: "org" }
  /** Organization key, or a scoped key granted `permission` on the path's instance. */
  | { kind: "instance"; permission: Permission }
  /** The emulator's control plane: loopback or admin token. */
  | { kind: "admin" };

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RouteSpec<
  P extends string = string,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType | "empty" | "binary" | "any" = z.ZodType | "empty" | "binary" | "any",
  A extends Access = Access,
> {
  method: HttpMethod;
  path: P;
  summary: string;
  tag: string;
  access: A;
  body?: B;
  query?: Q;
  /** Multipart upload (`path` field + `file`), streamed. */
  multipart?: true;
  /** Answers server-sent events when the body asks `stream: true`. */
  streams?: true;
  status: 200 | 201 | 204;
  response: R;
  /** Statuses this route can answer besides success, for the OpenAPI document. */
  errors: readonly number[];
  /** Of `errors`, those whose body may be the instance gateway's own error (OpenAI shape) instead of `{detail}`. */
  gatewayErrors?: readonly number[];
  /** Deepest JSON nesting accepted in the body (default `MAX_JSON_DEPTH`). */
  maxDepth?: number;
}

const route = <
  P extends string,
  B extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  R extends z.ZodType | "empty" | "binary" | "any" = "empty",
  A extends Access = Access,
>(spec: RouteSpec<P, B, Q, R, A>): RouteSpec<P, B, Q, R, A> =>
  // A JSON body can always be malformed (400), too large (413) or refused by its schema (422).
  spec.body ? { ...spec, errors: [...new Set([...spec.errors, 400, 413, 422])].sort((a, b) => a - b) } : spec;

const PUBLIC = { kind: "public" } as const satisfies Access;
const ORG = { kind: "org" } as const satisfies Access;
const ADMIN = { kind: "admin" } as const satisfies Access;
/** What an instance gateway answers itself on a message call (passed through): a bad request, a rate limit. */
const GATEWAY_ERRORS = [400, 429] as const;
const may = <P extends Permission>(permission: P) => ({ kind: "instance", permission }) as const satisfies Access;

const AUTH = [401, 403] as const;
const ON_INSTANCE = [401, 403, 404] as const;

export const routes = {
  // Organization and billing
  signup: route({ method: "POST", path: "/v1/organization/signup", tag: "organization", summary: "Create an organization and its organization key (returned once)", access: PUBLIC, body: org.SignupRequest, status: 201, response: org.SignupResponse, errors: [400, 413, 422] }),
  getOrganization: route({ method: "GET", path: "/v1/organization", tag: "organization", summary: "The caller's organization", access: ORG, status: 200, response: org.Organization, errors: AUTH }),
  updateOrganization: route({ method: "PATCH", path: "/v1/organization", tag: "organization", summary: "Rename, or set model-provider keys (merged; empty string removes)", access: ORG, body: org.OrganizationUpdate, status: 200, response: org.Organization, errors: [...AUTH, 400, 422] }),
  getSubscription: route({ method: "GET", path: "/v1/subscription", tag: "billing", summary: "Current plan and usage", access: ORG, status: 200, response: org.Subscription, errors: AUTH }),
  createCheckout: route({ method: "POST", path: "/v1/subscription/checkout", tag: "billing", summary: "A checkout page URL for a plan change", access: ORG, body: org.CheckoutRequest, status: 200, response: org.UrlResponse, errors: [...AUTH, 422] }),
  createPortal: route({ method: "POST", path: "/v1/subscription/portal", tag: "billing", summary: "A billing-portal URL", access: ORG, status: 200, response: org.UrlResponse, errors: AUTH }),

  // Keys
  createKey: route({ method: "POST", path: "/v1/keys", tag: "keys", summary: "Mint a scoped key (raw key returned once)", access: ORG, body: keys.KeyCreateRequest, status: 201, response: keys.KeyCreated, errors: [...AUTH, 400, 404, 422] }),
  listKeys: route({ method: "GET", path: "/v1/keys", tag: "keys", summary: "Every scoped key, revoked and expired included", access: ORG, status: 200, response: zod.array(keys.ScopedKey), errors: AUTH }),
  getKey: route({ method: "GET", path: "/v1/keys/{key_id}", tag: "keys", summary: "One scoped key", access: ORG, status: 200, response: keys.ScopedKey, errors: [...AUTH, 404] }),
  revokeKey: route({ method: "DELETE", path: "/v1/keys/{key_id}", tag: "keys", summary: "Revoke a scoped key, immediately and for good", access: ORG, status: 204, response: "empty", errors: [...AUTH, 404] }),

  // Instances
  createInstance: route({ method: "POST", path: "/v1/instances", tag: "instances", summary: "Create an instance (provisioning)", access: ORG, body: instances.InstanceCreateRequest, status: 201, response: instances.Instance, errors: [...AUTH, 400, 402, 422] }),
  listInstances: route({ method: "GET", path: "/v1/instances", tag: "instances", summary: "Non-terminated instances, newest first", access: ORG, status: 200, response: zod.array(instances.Instance), errors: AUTH }),
  getInstance: route({ method: "GET", path: "/v1/instances/{instance_id}", tag: "instances", summary: "One instance", access: may("read"), status: 200, response: instances.Instance, errors: ON_INSTANCE }),
  getInstanceStatus: route({ method: "GET", path: "/v1/instances/{instance_id}/status", tag: "instances", summary: "An instance's status and gateway", access: may("read"), status: 200, response: instances.InstanceStatusView, errors: ON_INSTANCE }),
  updateInstance: route({ method: "PATCH", path: "/v1/instances/{instance_id}", tag: "instances", summary: "Rename or set runtime_config", access: may("configure"), body: instances.InstanceUpdateRequest, status: 200, response: instances.Instance, errors: [...ON_INSTANCE, 409, 422] }),
  startInstance: route({ method: "POST", path: "/v1/instances/{instance_id}/start", tag: "instances", summary: "Start a stopped instance", access: may("configure"), status: 200, response: instances.Instance, errors: [...ON_INSTANCE, 409] }),
  stopInstance: route({ method: "POST", path: "/v1/instances/{instance_id}/stop", tag: "instances", summary: "Stop a running instance", access: may("configure"), status: 200, response: instances.Instance, errors: [...ON_INSTANCE, 409] }),
  deleteInstance: route({ method: "DELETE", path: "/v1/instances/{instance_id}", tag: "instances", summary: "Terminate an instance with all its files and state", access: ORG, status: 204, response: "empty", errors: ON_INSTANCE }),

  // Messaging
  createResponse: route({ method: "POST", path: "/v1/instances/{instance_id}/responses", tag: "messaging", summary: "Send a message in the default session", access: may("interact"), body: responses.ResponseRequest, streams: true, status: 200, response: responses.ResponseObject, errors: [...ON_INSTANCE, 400, 409, 422, 429, 502], gatewayErrors: GATEWAY_ERRORS }),
  createSessionResponse: route({ method: "POST", path: "/v1/instances/{instance_id}/session/{session_id}/responses", tag: "messaging", summary: "Send a message in a named session", access: may("interact"), body: responses.ResponseRequest, streams: true, status: 200, response: responses.ResponseObject, errors: [...ON_INSTANCE, 400, 409, 422, 429, 502], gatewayErrors: GATEWAY_ERRORS }),

  // Channels
  listChannels: route({ method: "GET", path: "/v1/instances/{instance_id}/channels", tag: "channels", summary: "The channel catalog with what is enabled", access: may("channels"), status: 200, response: zod.array(channels.ChannelListItem), errors: ON_INSTANCE }),
  getChannelInfo: route({ method: "GET", path: "/v1/instances/{instance_id}/channels/{channel}", tag: "channels", summary: "How a channel connects (public)", access: PUBLIC, status: 200, response: channels.ChannelInfo, errors: [404] }),
  connectChannel: route({ method: "POST", path: "/v1/instances/{instance_id}/channels/{channel}/connect", tag: "channels", summary: "Connect a channel (token) or start pairing (interactive)", access: may("channels"), body: channels.ChannelConnectRequest, status: 200, response: channels.ChannelConnectResult, errors: [...ON_INSTANCE, 400, 409, 422] }),
  disconnectChannel: route({ method: "POST", path: "/v1/instances/{instance_id}/channels/{channel}/disconnect", tag: "channels", summary: "Disable a channel, keeping its credentials", access: may("channels"), status: 204, response: "empty", errors: [...ON_INSTANCE, 409] }),
  getChannelStatus: route({ method: "GET", path: "/v1/instances/{instance_id}/channels/{channel}/status", tag: "channels", summary: "Whether a channel is enabled and connected", access: may("channels"), status: 200, response: channels.ChannelStatus, errors: ON_INSTANCE }),
  pairChannel: route({ method: "POST", path: "/v1/instances/{instance_id}/channels/{channel}/pair", tag: "channels", summary: "Approve a pairing code", access: may("channels"), body: channels.ChannelPairRequest, status: 200, response: channels.ChannelPairResult, errors: [...ON_INSTANCE, 409, 422] }),

  // Skills
  listSkills: route({ method: "GET", path: "/v1/instances/{instance_id}/skills", tag: "skills", summary: "Registry skills, installed or not", access: may("configure"), query: skills.SkillListQuery, status: 200, response: zod.array(skills.SkillListItem), errors: [...ON_INSTANCE, 422] }),
  getSkill: route({ method: "GET", path: "/v1/instances/{instance_id}/skills/{skill_name}", tag: "skills", summary: "One skill", access: may("configure"), status: 200, response: skills.SkillDetail, errors: ON_INSTANCE }),
  installSkill: route({ method: "POST", path: "/v1/instances/{instance_id}/skills/install", tag: "skills", summary: "Install a registry skill", access: may("configure"), body: skills.SkillInstallRequest, status: 200, response: skills.SkillInstallResult, errors: [...ON_INSTANCE, 409, 422] }),
  updateSkill: route({ method: "PATCH", path: "/v1/instances/{instance_id}/skills/{skill_name}", tag: "skills", summary: "Enable, disable or configure a skill", access: may("configure"), body: skills.SkillUpdateRequest, status: 204, response: "empty", errors: [...ON_INSTANCE, 409, 422] }),
  uninstallSkill: route({ method: "DELETE", path: "/v1/instances/{instance_id}/skills/{skill_name}", tag: "skills", summary: "Remove a skill's files and configuration", access: may("configure"), status: 204, response: "empty", errors: [...ON_INSTANCE, 409] }),

  // Files
  listFiles: route({ method: "GET", path: "/v1/instances/{instance_id}/files", tag: "files", summary: "List a directory", access: may("files"), query: files.ListFilesQuery, status: 200, response: files.DirectoryListing, errors: [...ON_INSTANCE, 400, 409, 422] }),
  deleteFile: route({ method: "DELETE", path: "/v1/instances/{instance_id}/files", tag: "files", summary: "Delete a file or directory", access: may("files"), query: files.PathQuery, status: 204, response: "empty", errors: [...ON_INSTANCE, 400, 409, 422] }),
  readFile: route({ method: "GET", path: "/v1/instances/{instance_id}/files/content", tag: "files", summary: "Read a text file", access: may("files"), query: files.PathQuery, status: 200, response: files.FileContent, errors: [...ON_INSTANCE, 400, 409, 413, 422] }),
  writeFile: route({ method: "PUT", path: "/v1/instances/{instance_id}/files/content", tag: "files", summary: "Write a text file (parents created)", access: may("files"), body: files.WriteFileRequest, status: 204, response: "empty", errors: [...ON_INSTANCE, 400, 409, 413, 422] }),
  moveFile: route({ method: "POST", path: "/v1/instances/{instance_id}/files/move", tag: "files", summary: "Move or rename", access: may("files"), body: files.MoveRequest, status: 204, response: "empty", errors: [...ON_INSTANCE, 400, 409, 422] }),
  uploadFile: route({ method: "POST", path: "/v1/instances/{instance_id}/files/upload", tag: "files", summary: "Upload a file (multipart: path, file)", access: may("files"), multipart: true, status: 204, response: "empty", errors: [...ON_INSTANCE, 400, 409, 413, 422] }),
  downloadFile: route({ method: "GET", path: "/v1/instances/{instance_id}/files/download", tag: "files", summary: "Download a file", access: may("files"), query: files.PathQuery, status: 200, response: "binary", errors: [...ON_INSTANCE, 400, 409, 422] }),
  mkdir: route({ method: "POST", path: "/v1/instances/{instance_id}/files/mkdir", tag: "files", summary: "Create a directory and its parents", access: may("files"), query: files.PathQuery, status: 204, response: "empty", errors: [...ON_INSTANCE, 400, 409, 422] }),

  // Emulator control plane
  adminHealth: route({ method: "GET", path: "/_emulator/health", tag: "emulator", summary: "Liveness", access: ADMIN, status: 200, response: admin.Health, errors: [401, 403] }),
  adminReset: route({ method: "POST", path: "/_emulator/reset", tag: "emulator", summary: "Forget all state", access: ADMIN, status: 204, response: "empty", errors: [401, 403] }),
  adminExportSnapshot: route({ method: "GET", path: "/_emulator/snapshot", tag: "emulator", summary: "Export the whole state", access: ADMIN, status: 200, response: "any", errors: [401, 403] }),
  adminImportSnapshot: route({ method: "PUT", path: "/_emulator/snapshot", tag: "emulator", summary: "Replace the whole state", access: ADMIN, body: zod.record(zod.string(), zod.unknown()), maxDepth: MAX_JSON_DEPTH + 8, status: 204, response: "empty", errors: [401, 403, 422] }),
  adminCreateFault: route({ method: "POST", path: "/_emulator/faults", tag: "emulator", summary: "Add a fault rule", access: ADMIN, body: admin.FaultRuleRequest, status: 201, response: admin.FaultRule, errors: [401, 403, 422] }),
  adminListFaults: route({ method: "GET", path: "/_emulator/faults", tag: "emulator", summary: "Fault rules", access: ADMIN, status: 200, response: zod.array(admin.FaultRule), errors: [401, 403] }),
  adminClearFaults: route({ method: "DELETE", path: "/_emulator/faults", tag: "emulator", summary: "Remove every fault rule", access: ADMIN, status: 204, response: "empty", errors: [401, 403] }),
  adminGetFault: route({ method: "GET", path: "/_emulator/faults/{fault_id}", tag: "emulator", summary: "One fault rule", access: ADMIN, status: 200, response: admin.FaultRule, errors: [401, 403, 404] }),
  adminDeleteFault: route({ method: "DELETE", path: "/_emulator/faults/{fault_id}", tag: "emulator", summary: "Remove a fault rule", access: ADMIN, status: 204, response: "empty", errors: [401, 403, 404] }),
  adminForceState: route({ method: "POST", path: "/_emulator/instances/{instance_id}/state", tag: "emulator", summary: "Force an instance's status", access: ADMIN, body: admin.ForceStateRequest, status: 200, response: instances.Instance, errors: [401, 403, 404, 422] }),
  adminScan: route({ method: "POST", path: "/_emulator/instances/{instance_id}/channels/{channel}/scan", tag: "emulator", summary: "Complete an interactive pairing", access: ADMIN, status: 200, response: channels.ChannelStatus, errors: [401, 403, 404, 409] }),
  adminSetTier: route({ method: "POST", path: "/_emulator/organizations/{organization_id}/tier", tag: "emulator", summary: "Set an organization's plan", access: ADMIN, body: admin.TierRequest, status: 200, response: org.Organization, errors: [401, 403, 404, 422] }),
  adminRequests: route({ method: "GET", path: "/_emulator/requests", tag: "emulator", summary: "Recent requests, newest last", access: ADMIN, status: 200, response: zod.array(admin.JournalEntry), errors: [401, 403] }),
  adminGetModelScript: route({ method: "GET", path: "/_emulator/model-script", tag: "emulator", summary: "The global model script", access: ADMIN, status: 200, response: modelScript.ModelScriptView, errors: [401, 403] }),
  adminSetModelScript: route({ method: "PUT", path: "/_emulator/model-script", tag: "emulator", summary: "Set the global model script", access: ADMIN, body: modelScript.ModelScriptBody, status: 200, response: modelScript.ModelScriptView, errors: [401, 403, 422] }),
  adminClearModelScript: route({ method: "DELETE", path: "/_emulator/model-script", tag: "emulator", summary: "Remove the global model script", access: ADMIN, status: 204, response: "empty", errors: [401, 403] }),
  adminGetInstanceModelScript: route({ method: "GET", path: "/_emulator/instances/{instance_id}/model-script", tag: "emulator", summary: "An instance's model script", access: ADMIN, status: 200, response: modelScript.ModelScriptView, errors: [401, 403, 404] }),
  adminSetInstanceModelScript: route({ method: "PUT", path: "/_emulator/instances/{instance_id}/model-script", tag: "emulator", summary: "Set an instance's model script", access: ADMIN, body: modelScript.ModelScriptBody, status: 200, response: modelScript.ModelScriptView, errors: [401, 403, 404, 422] }),
  adminClearInstanceModelScript: route({ method: "DELETE", path: "/_emulator/instances/{instance_id}/model-script", tag: "emulator", summary: "Remove an instance's model script", access: ADMIN, status: 204, response: "empty", errors: [401, 403, 404] }),
  adminGetSandboxModelScript: route({ method: "GET", path: "/_emulator/sandboxes/{sandbox_id}/model-script", tag: "emulator", summary: "A sandbox's model script", access: ADMIN, status: 200, response: modelScript.ModelScriptView, errors: [401, 403, 404] }),
  adminSetSandboxModelScript: route({ method: "PUT", path: "/_emulator/sandboxes/{sandbox_id}/model-script", tag: "emulator", summary: "Set a sandbox's model script", access: ADMIN, body: modelScript.ModelScriptBody, status: 200, response: modelScript.ModelScriptView, errors: [401, 403, 404, 422] }),
  adminClearSandboxModelScript: route({ method: "DELETE", path: "/_emulator/sandboxes/{sandbox_id}/model-script", tag: "emulator", summary: "Remove a sandbox's model script", access: ADMIN, status: 204, response: "empty", errors: [401, 403, 404] }),

  // Sandboxes (control plane): many tests on one emulator, each seeing only its own
  adminCreateSandbox: route({ method: "POST", path: "/_emulator/sandboxes", tag: "emulator", summary: "Create a sandbox with an organization and its key", access: ADMIN, body: sandboxes.SandboxCreateRequest, status: 201, response: sandboxes.SandboxCreated, errors: [401, 403, 409, 422] }),
  adminGetSandbox: route({ method: "GET", path: "/_emulator/sandboxes/{sandbox_id}", tag: "emulator", summary: "One sandbox", access: ADMIN, status: 200, response: sandboxes.Sandbox, errors: [401, 403, 404] }),
  adminDeleteSandbox: route({ method: "DELETE", path: "/_emulator/sandboxes/{sandbox_id}", tag: "emulator", summary: "Remove a sandbox and everything in it", access: ADMIN, status: 204, response: "empty", errors: [401, 403, 404] }),
  adminResetSandbox: route({ method: "POST", path: "/_emulator/sandboxes/{sandbox_id}/reset", tag: "emulator", summary: "Empty a sandbox, keeping its organization and key", access: ADMIN, status: 200, response: sandboxes.Sandbox, errors: [401, 403, 404] }),
  adminSandboxRequests: route({ method: "GET", path: "/_emulator/sandboxes/{sandbox_id}/requests", tag: "emulator", summary: "The requests a sandbox received, filtered", access: ADMIN, query: sandboxes.SandboxRequestsQuery, status: 200, response: sandboxes.SandboxRequests, errors: [401, 403, 404, 422] }),
  adminSandboxHar: route({ method: "GET", path: "/_emulator/sandboxes/{sandbox_id}/requests.har", tag: "emulator", summary: "The sandbox's requests as an HTTP Archive (HAR 1.2)", access: ADMIN, query: sandboxes.SandboxRequestsQuery, status: 200, response: Har, errors: [401, 403, 404, 422] }),
  adminSandboxUnmatched: route({ method: "GET", path: "/_emulator/sandboxes/{sandbox_id}/unmatched", tag: "emulator", summary: "The sandbox's requests that matched no route", access: ADMIN, status: 200, response: zod.array(sandboxes.UnmatchedRequest), errors: [401, 403, 404] }),
  adminSandboxClock: route({ method: "POST", path: "/_emulator/sandboxes/{sandbox_id}/clock", tag: "emulator", summary: "Advance or set a sandbox's clock", access: ADMIN, body: sandboxes.SandboxClockRequest, status: 200, response: sandboxes.SandboxClockMove, errors: [401, 403, 404, 409, 422] }),
  adminSandboxCreateFault: route({ method: "POST", path: "/_emulator/sandboxes/{sandbox_id}/faults", tag: "emulator", summary: "Add a fault rule for one sandbox", access: ADMIN, body: admin.FaultRuleRequest, status: 201, response: admin.FaultRule, errors: [401, 403, 404, 422] }),
  adminUnmatched: route({ method: "GET", path: "/_emulator/unmatched", tag: "emulator", summary: "Requests that matched nothing and belong to no sandbox", access: ADMIN, status: 200, response: zod.array(sandboxes.UnmatchedRequest), errors: [401, 403] }),
  adminRecordings: route({ method: "GET", path: "/_emulator/recordings", tag: "emulator", summary: "How much of each replayed recording was used", access: ADMIN, status: 200, response: recordings.RecordingsView, errors: [401, 403] }),

  // The web console's reads (control plane): views only, never a secret
  consoleState: route({ method: "GET", path: "/_emulator/console/state", tag: "emulator", summary: "Every organization (with key views) and instance", access: ADMIN, status: 200, response: consoleSchemas.ConsoleState, errors: [401, 403] }),
  consoleSessions: route({ method: "GET", path: "/_emulator/console/instances/{instance_id}/sessions", tag: "emulator", summary: "An instance's newest sessions", access: ADMIN, status: 200, response: zod.array(consoleSchemas.ConsoleSession), errors: [401, 403, 404] }),
  consoleSessionTurns: route({ method: "GET", path: "/_emulator/console/instances/{instance_id}/sessions/{session_id}", tag: "emulator", summary: "A session's newest turns", access: ADMIN, query: consoleSchemas.TurnsQuery, status: 200, response: consoleSchemas.SessionTurns, errors: [401, 403, 404, 422] }),
  consoleChannels: route({ method: "GET", path: "/_emulator/console/instances/{instance_id}/channels", tag: "emulator", summary: "An instance's channels, with a pending pairing's QR", access: ADMIN, status: 200, response: zod.array(consoleSchemas.ConsoleChannel), errors: [401, 403, 404] }),
  consoleResponseChain: route({ method: "GET", path: "/_emulator/console/responses/{response_id}", tag: "emulator", summary: "The chain of turns ending at a response", access: ADMIN, query: consoleSchemas.TurnsQuery, status: 200, response: consoleSchemas.ResponseChain, errors: [401, 403, 404, 422] }),
  consoleRequests: route({ method: "GET", path: "/_emulator/console/requests", tag: "emulator", summary: "The request log's lines, oldest first", access: ADMIN, status: 200, response: zod.array(consoleSchemas.RequestLine), errors: [401, 403] }),
  consoleRequest: route({ method: "GET", path: "/_emulator/console/requests/{request_id}", tag: "emulator", summary: "One logged request with its redacted bodies", access: ADMIN, status: 200, response: consoleSchemas.RequestDetail, errors: [401, 403, 404, 422] }),
} as const;

export type Routes = typeof routes;
export type OperationId = keyof Routes;

/** `{instance_id}` style parameter names of a path, as a union of strings. */
export type PathParams<P extends string> = P extends `${string}{${infer K}}${infer Rest}` ? K | PathParams<Rest> : never;

/** Express form of a path: `{id}` becomes `:id`. */
export const expressPath = (path: string): string => path.replace(/\{([a-z_]+)\}/g, ":$1");

/**
 * What each operation does, for the OpenAPI document: a few sentences a
 * reader of a generated client needs (effects, states, what is returned once).
 * Kept beside the table, one entry per operation id (the compiler checks).
 */
export const operationDescriptions = {
  signup: "Creates an organization on the `shrimp` plan (one instance) and its organization key. The raw key (`svc_org_` + 64 hex digits) is in this answer only; the service keeps its SHA-256 hash. Needs no key.",
  getOrganization: "The organization the key belongs to, with its plan, instance count and the providers it holds keys for. Provider keys are never returned.",
  updateOrganization: "Renames the organization and/or stores model-provider keys. `model_api_keys` is merged with what is stored; an empty string removes that provider's key.",
  getSubscription: "The plan, its instance limit and how many non-terminated instances count toward it (stopped ones do).",
  createCheckout: "A URL of a checkout page that moves the organization to `crab` or `lobster` once the user confirms there.",
  createPortal: "A URL of the billing portal to send the user to.",
  createKey: "Mints a scoped key (`svc_sk_`) for some of the organization's instances and a set of permissions, optionally expiring. The raw key is in this answer only. An instance of another organization or a terminated one is 404.",
  listKeys: "Every scoped key of the organization, revoked and expired ones included (`is_active: false`). Never the raw keys.",
  getKey: "One scoped key with its grants and when it was last used.",
  revokeKey: "Revokes a scoped key at once and for good: its next use is 403. Revoking a revoked key is fine (204).",
  createInstance: "Creates an instance in `provisioning`; it becomes `running` after the provisioning delay. The model provider must be one the organization holds a key for (400), and the plan must have room (402).",
  listInstances: "The organization's instances, terminated ones excluded, newest first.",
  getInstance: "One instance. A terminated instance, or one of another organization, is 404.",
  getInstanceStatus: "An instance's status and gateway address, for polling.",
  updateInstance: "Renames an instance and/or replaces its `runtime_config` (`null` clears it).",
  startInstance: "Starts a `stopped` instance (409 in any other state). Conversations survive stop and start.",
  stopInstance: "Stops a `running` instance (409 in any other state). A stopped instance still counts toward the plan's limit.",
  deleteInstance: "Terminates an instance in any state, destroying its files, skills, channels and conversations. It leaves the list and the instance count; every later call on it is 404.",
  createResponse: "Sends a message to the instance's gateway in the default session (`main`). Without `previous_response_id` the session's conversation continues; with one, that response's chain continues. `stream: true` answers server-sent events. The instance must be `running` (409); gateway errors of 4xx pass through unchanged, an unreachable gateway is 502.",
  createSessionResponse: "As the default-session form, in the session `session_id` (any name; created on first use). Each session keeps its own conversation.",
  listChannels: "The channel catalog with whether each channel is enabled on this instance.",
  getChannelInfo: "How a channel connects and the fields its `config` needs. Needs no key and is the same for every instance id; an unknown channel is 404.",
  connectChannel: "Connects a token channel (answers `connected`) or starts pairing an interactive one (answers `awaiting_scan` with QR data). Missing fields are 422, credentials of the wrong form 400 (never quoted back). Writes the channel into the instance's `runtime.json` with secrets redacted and restarts the gateway. The instance must be `running`.",
  disconnectChannel: "Disables a channel and keeps its credentials, so it can be reconnected. 409 for a channel never connected.",
  getChannelStatus: "Whether a channel is enabled and connected, with details such as the pairing state and gateway restarts. Secrets appear only as fingerprints.",
  pairChannel: "Approves a pairing code (trimmed, upper-cased). The channel must be enabled and connected on a running instance (409).",
  listSkills: "Every skill of the bundled registry, installed or not; `eligible_only=true` keeps only ready ones (installed, enabled, every variable set).",
  getSkill: "One installed skill with its path in the workspace; 404 when it is not installed.",
  installSkill: "Installs a registry skill: writes `skills/<name>/SKILL.md` and its entry in `runtime.json`. Answers `installed_missing_env` with `required_env` when variables are missing. Reinstalling starts the skill's variables and config again. Unknown slug 404.",
  updateSkill: "Enables or disables an installed skill, merges its variables (an empty string removes one) and replaces its config.",
  uninstallSkill: "Removes an installed skill's files and its `runtime.json` entry.",
  listFiles: "Lists a directory of the instance tree (default the root). Symbolic links are shown, never followed.",
  deleteFile: "Deletes a file, or a directory with everything in it. Deleting the root is 400.",
  readFile: "Reads a UTF-8 text file of up to 1 MiB. A binary file is 400, a bigger one 413 (use download).",
  writeFile: "Writes a UTF-8 text file, creating its parents and replacing an existing file atomically.",
  moveFile: "Moves or renames a file or directory; the destination's parents are created. An existing destination is 409.",
  uploadFile: "Streams a multipart upload (`path` then `file`) into place, creating parents and replacing an older file. Over the emulator's upload limit (default 50 MiB) is 413 and nothing is left behind.",
  downloadFile: "Streams a file with `Content-Type` from its extension and `Content-Disposition: attachment`.",
  mkdir: "Creates a directory and its parents; an existing directory is fine, a file in the way is 409.",
  adminHealth: "Answers while the emulator is up, with its version.",
  adminReset: "Forgets every organization, key, instance, file, conversation, fault rule and journal entry.",
  adminExportSnapshot: "The whole state as JSON, with each instance's files (`workspaces`, base64). Importing it later restores everything the API shows.",
  adminImportSnapshot: "Replaces the whole state with a snapshot, files included. A snapshot of the wrong shape is 422 and changes nothing.",
  adminCreateFault: "Adds a fault rule: gateway rules shape the next message calls (a status, a reset or timeout, latency); `api` rules fail the next calls under a path; `provision` rules make the next instance fail provisioning. A rule retires after `times` hits.",
  adminListFaults: "Every fault rule still active, with its hits.",
  adminClearFaults: "Removes every fault rule.",
  adminGetFault: "One fault rule.",
  adminDeleteFault: "Removes one fault rule.",
  adminForceState: "Puts an instance into any status at once (e.g. `error` with a message, or `provisioning` again), optionally pointing it at another gateway.",
  adminScan: "Plays the phone for an interactive channel waiting for a QR scan: the channel becomes connected. 409 when no pairing waits.",
  adminSetTier: "Sets an organization's plan without a checkout.",
  adminRequests: "The most recent requests the emulator answered, oldest first: method, path, status, the kind of key used and the time taken.",
  adminGetModelScript: "The global model script and how often each of its rules fired; `script: null` when none is set.",
  adminSetModelScript: "Replaces the global model script. The whole script is checked first: an unknown field, a bad regular expression or an output that misses its schema is 422 naming the place (`loc` is `body` and the script's path) and the script in force stays.",
  adminClearModelScript: "Removes the global model script: the echo and its directives answer again.",
  adminGetInstanceModelScript: "The instance's own model script (tried before its sandbox's and the global one) and its rules' hits.",
  adminSetInstanceModelScript: "Replaces the instance's model script, checked whole like the global one.",
  adminClearInstanceModelScript: "Removes the instance's model script.",
  adminGetSandboxModelScript: "The sandbox's model script (tried after an instance's own, before the global one) and its rules' hits.",
  adminSetSandboxModelScript: "Replaces the sandbox's model script, checked whole like the global one. It answers for the sandbox's instances only, and goes when the sandbox is reset or removed.",
  adminClearSandboxModelScript: "Removes the sandbox's model script.",
  adminCreateSandbox:
    "Creates a sandbox: an organization and its key (returned once) that the sandbox owns. Everything reached with the sandbox's keys (organizations, keys, instances, files, conversations, skills, channels, fault rules, its clock and its request journal) belongs to it; a signup is placed in it by the `X-Emulator-Sandbox` header. With `fixtures`, a fixture (organizations with chosen keys, instances, earlier turns, files) is checked whole and loaded into it; `fixture` in the answer lists what it made by name. A problem (a chosen key already taken included) is 422 naming its place (`loc`); a concurrent load of the same chosen key 409; either way no sandbox is made.",
  adminGetSandbox: "A sandbox: its organizations, how many instances and requests it has, and its clock.",
  adminDeleteSandbox: "Removes a sandbox with its organizations, keys, instances, files, conversations, fault rules and journal. Nothing else is touched; the cost is in proportion to what it holds.",
  adminResetSandbox: "Empties a sandbox back to how it was created: its first organization and key stay (plan and provider keys reset), everything else in it goes.",
  adminSandboxRequests: "The requests the sandbox received, oldest first, with their bodies (secrets redacted), filtered by method, path, route, status, instance and session, and their count (the newest 10,000 are kept).",
  adminSandboxHar:
    "The sandbox's journal as an HTTP Archive (HAR 1.2), oldest first, filtered as `requests` is: each entry's URL, query, JSON body (secrets redacted as the journal redacts them), status and time, and the journal's route, key kind, instance and session as custom fields (`_route`, ...). The journal keeps no headers and no answer bodies, and the archive says so.",
  adminSandboxUnmatched: "The sandbox's requests that matched nothing (an unknown route or a wrong method), each with the closest route.",
  adminSandboxClock: "Moves the sandbox's clock forward (by `advance_ms`, or to `set`): provisioning completes and keys expire for this sandbox only. The answer lists what the move made happen. Setting a time before the sandbox's now is 409.",
  adminSandboxCreateFault: "Adds a fault rule that fires only on the sandbox's own requests (see `POST /_emulator/faults`). Removed with the sandbox.",
  adminUnmatched: "Requests that matched nothing (an unknown route, a wrong method, an unknown key) and belong to no sandbox, each with the closest route; the newest 500.",
  adminRecordings: "When the emulator replays recordings (`--replay`): its mode and, per recording, how many recorded requests it holds, how many were served, and the numbers of those never served (what a suite's report of unused recordings reads). `mode: null` and no recordings otherwise.",
  consoleState: "What the web console shows of everything: every organization with its plan and scoped-key views (permissions, last use, expiry; never a key or a hash), and every non-terminated instance, newest first.",
  consoleSessions: "The instance's newest 200 sessions, newest first: name, head response id, number of turns, time of the last turn and the first 120 characters of its input (secrets redacted).",
  consoleSessionTurns: "The session's newest `limit` turns, oldest first, and `total`: input, output (secrets redacted), response id, `previous_response_id`, model, usage and time. A session with no turns answers `head_id: null` and no turns.",
  consoleChannels: "Every catalog channel of the instance: enabled, connected, and while an interactive pairing waits for its scan, the QR as a PNG data URL (`qr_png`). Never a credential.",
  consoleResponseChain: "The chain of turns that ends at this response, oldest first (its newest `limit`), with its instance, session and `total`.",
  consoleRequests: "The client requests among the last 500 the emulator received, oldest first: what `request` events carry. The console's own calls are left out.",
  consoleRequest: "One line of the request log with its request and response bodies (the first 16 KiB, secrets redacted). 404 once it has left the log; 422 for an id that is not a positive integer.",
} as const satisfies { [K in OperationId]: string };

/** The document's tags, in order, with what each covers. */
export const tagDescriptions: Record<string, string> = {
  organization: "Signing up, the organization and its model-provider keys.",
  billing: "The plan, checkout and the billing portal.",
  keys: "Scoped keys: minted by the organization key, limited to some instances and permissions.",
  instances: "Hosted agent instances and their life cycle.",
  messaging: "Messages to an instance's gateway, in the OpenAI Responses format, with named sessions.",
  channels: "Messaging channels connected to an instance.",
  skills: "Skills installed from the bundled registry.",
  files: "An instance's file tree; paths are relative to its root.",
  emulator:
    "The emulator's control plane under `/_emulator`: not part of the hosted service. Open on loopback to requests whose `Host` names a loopback address; elsewhere only with the emulator's `--admin-token` as a bearer. A state change sent by a browser page of another origin (`Origin`, `Sec-Fetch-Site`) is refused with 403. Besides the routes listed, every organization and instance route of `/v1` is also served under `/_emulator/as/{organization_id}/v1/...` with control-plane access in place of the organization key (the web console acts through it).",
};
