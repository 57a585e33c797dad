/**
 * Names for the schemas the OpenAPI document shows as `components/schemas`.
 * The schemas themselves stay where they are (they drive validation and
 * types); this registry only gives them an id and a sentence, so generated
 * clients get named types and every operation refers to them with `$ref`.
 * Kept apart from the schema files so naming never touches a validator.
 */
import { z } from "zod";
import * as admin from "./admin.js";
import * as channels from "./channels.js";
import * as common from "./common.js";
import * as consoleSchemas from "./console.js";
import * as files from "./files.js";
import * as instances from "./instances.js";
import * as keys from "./keys.js";
import * as org from "./organization.js";
import * as responses from "./responses.js";
import * as sandboxes from "./sandboxes.js";
import * as skills from "./skills.js";

export interface ComponentMeta {
  /** The name under `#/components/schemas/`. */
  id: string;
  description: string;
}

export const apiComponents = z.registry<ComponentMeta>();
/** Every named schema, in the order the document lists them. */
export const namedSchemas: z.ZodType[] = [];

const name = (schema: z.ZodType, id: string, description: string): void => {
  apiComponents.add(schema, { id, description });
  namedSchemas.push(schema);
};

// Shared vocabulary
name(common.Provider, "Provider", "A model provider whose key an organization can store.");
name(common.Permission, "Permission", "What a scoped key may do on the instances it is granted.");
name(common.Tier, "Tier", "A subscription plan: shrimp (1 instance), crab (10), lobster (500).");
name(common.ErrorBody, "Error", "Every error answer: a sentence, a list of validation issues (422), or a gateway failure `{error}` (502).");
name(common.ValidationIssue, "ValidationIssue", 'One failed check: where (`loc`, e.g. `["body", "name"]`), why, and its kind.');

// Organization and billing
name(org.Organization, "Organization", "An organization: its plan, instance count and the providers it holds keys for (never the keys).");
name(org.SignupRequest, "SignupRequest", "A new organization's name.");
name(org.SignupResponse, "SignupResult", "The organization key (shown this once) and the new organization.");
name(org.OrganizationUpdate, "OrganizationUpdate", "Fields to change; `model_api_keys` is merged and an empty string removes a provider's key.");
name(org.Subscription, "Subscription", "The current plan and how much of it is used.");
name(org.CheckoutRequest, "CheckoutRequest", "The plan to change to.");
name(org.UrlResponse, "UrlResult", "A page to send the user to.");

// Keys
name(keys.KeyGrant, "KeyGrant", "The permissions a scoped key has on one instance.");
name(keys.ScopedKey, "ScopedKey", "A scoped key as listed: never the raw key.");
name(keys.KeyCreateRequest, "KeyCreateRequest", "A scoped key to mint: the instances it reaches and what it may do there.");
name(keys.KeyCreated, "KeyCreated", "A new scoped key with its raw key, shown this once.");

// Instances
name(instances.InstanceStatus, "InstanceStatus", "Where an instance is in its life: provisioning, running, stopped, error, terminated.");
name(instances.Instance, "Instance", "A hosted agent instance.");
name(instances.InstanceCreateRequest, "InstanceCreateRequest", "A new instance: its name, and optionally its provider, sandbox, runtime and region.");
name(instances.InstanceUpdateRequest, "InstanceUpdateRequest", "A new name or runtime configuration (`null` clears it).");
name(instances.InstanceStatusView, "InstanceStatusView", "An instance's status and gateway address.");

// Messaging
name(responses.InputItem, "InputItem", "One input item, as the OpenAI Responses format has them; other fields pass through.");
name(responses.ResponseRequest, "ResponseRequest", "A message for the instance's gateway; any field besides these passes through unchanged.");
name(responses.OutputItem, "OutputItem", "One output item; the assistant's text is in `message` items' `output_text` blocks.");
name(responses.GatewayErrorBody, "GatewayError", "An instance gateway's own 4xx on a message call, passed through in the OpenAI error shape.");
name(responses.ResponseObject, "Response", "The gateway's answer; its `id` continues the conversation as `previous_response_id`.");

// Channels
name(channels.ConnectionType, "ConnectionType", "How a channel connects: with a token, or interactively (QR pairing).");
name(channels.ChannelInfo, "ChannelInfo", "How a channel connects and the fields its `config` needs.");
name(channels.ChannelListItem, "ChannelListItem", "A catalog channel and whether it is enabled on this instance.");
name(channels.ChannelConnectRequest, "ChannelConnectRequest", "The channel's credentials and settings, field name to value.");
name(channels.ChannelConnectResult, "ChannelConnectResult", "Connected, or waiting for a QR scan (with the QR's data and a PNG of it).");
name(channels.ChannelStatus, "ChannelStatus", "Whether a channel is enabled and connected, with details (never a secret).");
name(channels.ChannelPairRequest, "ChannelPairRequest", "A pairing code a user received from the channel.");
name(channels.ChannelPairResult, "ChannelPairResult", "The approved pairing code.");

// Skills
name(skills.SkillListItem, "SkillListItem", "A registry skill, installed or not; `ready` when installed, enabled and fully configured.");
name(skills.SkillDetail, "SkillDetail", "An installed skill and where its files are.");
name(skills.SkillInstallRequest, "SkillInstallRequest", "The registry slug to install and, optionally, its environment variables.");
name(skills.SkillInstallResult, "SkillInstallResult", "What the installer did and which variables are still missing.");
name(skills.SkillUpdateRequest, "SkillUpdateRequest", "Enable or disable a skill, merge its variables (empty string removes one), replace its config.");

// Files
name(files.DirectoryEntry, "DirectoryEntry", "A file, directory or symbolic link in an instance's tree.");
name(files.DirectoryListing, "DirectoryListing", "A directory and its entries.");
name(files.FileContent, "FileContent", "A UTF-8 text file's content.");
name(files.WriteFileRequest, "WriteFileRequest", "A text file to write (parents are created, a file is overwritten).");
name(files.MoveRequest, "MoveRequest", "A file or directory to move or rename.");

// Emulator control plane
name(admin.Health, "Health", "The emulator is up, and its version.");
name(
  admin.FaultRuleRequest,
  "FaultRuleRequest",
  "A fault to inject: which calls it hits (target, instance, path, method), what it does (status, reset, timeout, latency) and how often.",
);
name(admin.FaultRule, "FaultRule", "A fault rule with its id, how many hits remain (`null`: unlimited) and how many it has had.");
name(admin.ForceStateRequest, "ForceStateRequest", "The status to force an instance into, optionally with an error message or another gateway.");
name(admin.TierRequest, "TierRequest", "The plan to put an organization on, without checkout.");
name(admin.JournalEntry, "RequestRecord", "One request the emulator answered: method, path, status, the kind of key and how long it took.");

// Sandboxes (control plane)
name(sandboxes.SandboxCreateRequest, "SandboxCreateRequest", "A new sandbox: an optional name and where its clock starts.");
name(sandboxes.SandboxClock, "SandboxClock", "A sandbox's time now and how far it is ahead of the emulator's clock.");
name(sandboxes.Sandbox, "Sandbox", "A sandbox: its organizations, instance and request counts, and its clock.");
name(sandboxes.SandboxCreated, "SandboxCreated", "A sandbox just created, with its organization key (returned once).");
name(sandboxes.SandboxRequest, "SandboxRequest", "One request a sandbox received: route, status, instance, session and its redacted body.");
name(sandboxes.SandboxRequests, "SandboxRequests", "A sandbox's requests that matched a filter, and their count.");
name(sandboxes.UnmatchedRequest, "UnmatchedRequest", "A request that matched nothing, why, and the closest route.");
name(sandboxes.SandboxClockRequest, "SandboxClockRequest", "How to move a sandbox's clock: `advance_ms` or `set`, exactly one.");
name(sandboxes.SandboxClockMove, "SandboxClockMove", "A sandbox's clock after a move, and what the move made happen.");

// The web console's reads (control plane)
name(consoleSchemas.ConsoleOrganization, "ConsoleOrganization", "An organization as the console shows it: with its scoped-key views.");
name(consoleSchemas.ConsoleState, "ConsoleState", "Every organization and non-terminated instance, for the console.");
name(consoleSchemas.ConsoleSession, "ConsoleSession", "A session of an instance: its head response, number of turns, last activity and input preview.");
name(consoleSchemas.Usage, "Usage", "Token counts of a turn.");
name(consoleSchemas.ConsoleTurn, "ConsoleTurn", "One stored turn: input, output (secrets redacted), ids, model, usage and time.");
name(consoleSchemas.SessionTurns, "SessionTurns", "A session's newest turns, oldest first, and how many it has.");
name(consoleSchemas.ResponseChain, "ResponseChain", "The chain of turns ending at a response, oldest first.");
name(consoleSchemas.ConsoleChannel, "ConsoleChannel", "A catalog channel of an instance, with a pending pairing's QR as a PNG data URL.");
name(consoleSchemas.RequestLine, "RequestLine", "One line of the request log (what a `request` event carries).");
name(consoleSchemas.CapturedBody, "CapturedBody", "A logged body: parsed JSON or text with secrets redacted, or a note; cut at 16 KiB.");
name(consoleSchemas.RequestDetail, "RequestDetail", "A logged request with its request and response bodies.");
