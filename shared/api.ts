/**
 * The route table: the one place each `/v1` operation is described. The
 * emulator registers its handlers against it and validates with its schemas,
 * the OpenAPI document is built from it, and the typed client is derived from it.
 */
import type { z } from "zod";
import * as admin from "./schemas/admin.js";
import * as channels from "./schemas/channels.js";
import type { Permission } from "./schemas/common.js";
import * as files from "./schemas/files.js";
import * as instances from "./schemas/instances.js";
import * as keys from "./schemas/keys.js";
import * as org from "./schemas/organization.js";
import * as responses from "./schemas/responses.js";
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
  createResponse: route({ method: "POST", path: "/v1/instances/{instance_id}/responses", tag: "messaging", summary: "Send a message in the default session", access: may("interact"), body: responses.ResponseRequest, streams: true, status: 200, response: responses.ResponseObject, errors: [...ON_INSTANCE, 400, 409, 422, 502] }),
  createSessionResponse: route({ method: "POST", path: "/v1/instances/{instance_id}/session/{session_id}/responses", tag: "messaging", summary: "Send a message in a named session", access: may("interact"), body: responses.ResponseRequest, streams: true, status: 200, response: responses.ResponseObject, errors: [...ON_INSTANCE, 400, 409, 422, 502] }),

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
  adminHealth: route({ method: "GET", path: "/_emulator/health", tag: "emulator", summary: "Liveness", access: ADMIN, status: 200, response: admin.Health, errors: [401] }),
  adminReset: route({ method: "POST", path: "/_emulator/reset", tag: "emulator", summary: "Forget all state", access: ADMIN, status: 204, response: "empty", errors: [401] }),
  adminExportSnapshot: route({ method: "GET", path: "/_emulator/snapshot", tag: "emulator", summary: "Export the whole state", access: ADMIN, status: 200, response: "any", errors: [401] }),
  adminImportSnapshot: route({ method: "PUT", path: "/_emulator/snapshot", tag: "emulator", summary: "Replace the whole state", access: ADMIN, body: zod.record(zod.string(), zod.unknown()), maxDepth: MAX_JSON_DEPTH + 8, status: 204, response: "empty", errors: [401, 422] }),
  adminCreateFault: route({ method: "POST", path: "/_emulator/faults", tag: "emulator", summary: "Add a fault rule", access: ADMIN, body: admin.FaultRuleRequest, status: 201, response: admin.FaultRule, errors: [401, 422] }),
  adminListFaults: route({ method: "GET", path: "/_emulator/faults", tag: "emulator", summary: "Fault rules", access: ADMIN, status: 200, response: zod.array(admin.FaultRule), errors: [401] }),
  adminClearFaults: route({ method: "DELETE", path: "/_emulator/faults", tag: "emulator", summary: "Remove every fault rule", access: ADMIN, status: 204, response: "empty", errors: [401] }),
  adminGetFault: route({ method: "GET", path: "/_emulator/faults/{fault_id}", tag: "emulator", summary: "One fault rule", access: ADMIN, status: 200, response: admin.FaultRule, errors: [401, 404] }),
  adminDeleteFault: route({ method: "DELETE", path: "/_emulator/faults/{fault_id}", tag: "emulator", summary: "Remove a fault rule", access: ADMIN, status: 204, response: "empty", errors: [401, 404] }),
  adminForceState: route({ method: "POST", path: "/_emulator/instances/{instance_id}/state", tag: "emulator", summary: "Force an instance's status", access: ADMIN, body: admin.ForceStateRequest, status: 200, response: instances.Instance, errors: [401, 404, 422] }),
  adminScan: route({ method: "POST", path: "/_emulator/instances/{instance_id}/channels/{channel}/scan", tag: "emulator", summary: "Complete an interactive pairing", access: ADMIN, status: 200, response: channels.ChannelStatus, errors: [401, 404, 409] }),
  adminSetTier: route({ method: "POST", path: "/_emulator/organizations/{organization_id}/tier", tag: "emulator", summary: "Set an organization's plan", access: ADMIN, body: admin.TierRequest, status: 200, response: org.Organization, errors: [401, 404, 422] }),
  adminRequests: route({ method: "GET", path: "/_emulator/requests", tag: "emulator", summary: "Recent requests, newest last", access: ADMIN, status: 200, response: zod.array(admin.JournalEntry), errors: [401] }),
} as const;

export type Routes = typeof routes;
export type OperationId = keyof Routes;

/** `{instance_id}` style parameter names of a path, as a union of strings. */
export type PathParams<P extends string> = P extends `${string}{${infer K}}${infer Rest}` ? K | PathParams<Rest> : never;

/** Express form of a path: `{id}` becomes `:id`. */
export const expressPath = (path: string): string => path.replace(/\{([a-z_]+)\}/g, ":$1");
