/**
 * The Google Chat platform's descriptor: channel schema (config.ts), secrets,
 * the `check` probe and a lazy adapter. `check` reads the service account key,
 * trades it for a token at the key's token endpoint (the credentials tried),
 * lists one space through the Chat API with it (the Chat API enabled and the
 * app configured), and, with audience_type app-url, asks the endpoint URL for
 * its health answer (reachable from here). Light on purpose: the Google
 * libraries load only in `create`.
 */
import { z } from "zod";
import { type ProbeDeps, probe } from "../../helpers/probe.js";
import { type CheckResult, channelSubject } from "../../vocabulary/check-result.js";
import { type ChannelCheckDeps, definePlatform, loadAdapterModule } from "../platform.js";
import { checkFiles } from "../file-links/config.js";
import { certsUrlOf, type GoogleChatChannelConfig, googleChatChannelSchema } from "./config.js";

const TokenAnswer = z.object({ access_token: z.string().min(1) });
const GoogleError = z.object({ error: z.union([z.string(), z.object({ message: z.string().optional(), status: z.string().optional() })]) });

async function checkGoogleChat(channel: GoogleChatChannelConfig, deps: ChannelCheckDeps): Promise<CheckResult> {
  const subject = channelSubject(channel);
  // Light as it is, the key's module loads only when a check runs (the descriptor imports its config alone).
  const { parseKey, readKeyText, signAssertion } = await import("./key.js");
  const keyFix =
    "create a JSON key for the app's service account (IAM → Service accounts → Keys) and name it in serviceAccountKeyFile, or serviceAccountKey as ${VAR}";
  let text: string;
  try {
    text = await readKeyText(channel, deps.readFile);
  } catch {
    return { status: "fail", subject, message: `cannot read the service account key file ${channel.serviceAccountKeyFile ?? ""}`.trim(), fix: keyFix };
  }
  const parsed = parseKey(text);
  if (!parsed.ok) return { status: "fail", subject, message: parsed.reason, fix: keyFix };
  const { key } = parsed;
  const got = await probe(deps, key.token_uri, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: signAssertion(key, Date.now()) }).toString(),
  });
  if (got.kind === "unreachable") return { status: "fail", subject, message: `cannot reach Google's token endpoint (${got.reason})`, fix: "check the network" };
  const token = TokenAnswer.safeParse(got.body);
  if (got.status !== 200 || !token.success) {
    return {
      status: "fail",
      subject,
      message: `Google does not accept the service account key (${errorOf(got.status, got.body)})`,
      fix: `${keyFix}; a deleted or disabled key or account is refused`,
    };
  }
  const spaces = await probe(deps, `${channel.api}/v1/spaces?pageSize=1`, { headers: { authorization: `Bearer ${token.data.access_token}` } });
  if (spaces.kind === "unreachable")
    return {
      status: "fail",
      subject,
      message: `cannot reach the Chat API at ${channel.api} (${spaces.reason})`,
      fix: "check the network, or the channel's api",
    };
  if (spaces.status !== 200) {
    return {
      status: "fail",
      subject,
      message: `key accepted (${key.client_email}) but the Chat API refused it (${errorOf(spaces.status, spaces.body)})`,
      fix: "enable the Google Chat API in the key's Cloud project and configure the Chat app (APIs & Services → Google Chat API → Configuration)",
    };
  }
  // The keys that verify every request Chat posts: without them every request is refused.
  const certs = await probe(deps, certsUrlOf(channel));
  if (certs.kind === "unreachable" || certs.status !== 200 || !certs.body || typeof certs.body !== "object") {
    return {
      status: "fail",
      subject,
      message: `cannot fetch the certificates that verify Chat's requests from ${certsUrlOf(channel)} (${certs.kind === "unreachable" ? certs.reason : `HTTP ${certs.status}`})`,
      fix: "check the network (the daemon must reach www.googleapis.com), or the channel's certsUrl",
    };
  }
  const who = `key accepted (${key.client_email}), Chat API answers`;
  const result =
    channel.audience_type !== "app-url"
      ? ({ status: "ok", subject, message: `${who}; requests are verified as signed by Chat for project ${channel.audience}` } as const)
      : await checkEndpoint(channel, deps, subject, who);
  return withFilesNote(result, await checkFiles(channel.file_links.public_base_url, deps));
}

/** The result with what is said of files out; a warning (with its fix) where none are sent and nothing worse was found. */
function withFilesNote(result: CheckResult, files: { warn: boolean; note: string; fix?: string }): CheckResult {
  // A worse finding keeps its words ending in its fix; the files' note goes before them.
  if (result.status !== "ok") return files.warn ? { ...result, message: `${result.message}; ${files.note}` } : result;
  const message = `${result.message}; ${files.note}`;
  if (!files.warn) return { ...result, message };
  return { ...result, status: "warn", message, ...(files.fix ? { fix: files.fix } : {}) };
}

/** With app-url: the endpoint's health answer at its public URL (the daemon must be running to give it). */
async function checkEndpoint(channel: GoogleChatChannelConfig, deps: ProbeDeps, subject: string, who: string): Promise<CheckResult> {
  const got = await probe(deps, channel.audience);
  if (got.kind === "answer" && got.status === 200) return { status: "ok", subject, message: `${who}; the endpoint ${channel.audience} answers` };
  return {
    status: "warn",
    subject,
    message: `${who}; the endpoint ${channel.audience} does not answer its health check (${got.kind === "unreachable" ? got.reason : `HTTP ${got.status}`})`,
    fix: `start the bridge and route ${channel.audience} (https, public) to ${channel.http.host}:${channel.http.port}${channel.http.path}`,
  };
}

const errorOf = (status: number, body: unknown): string => {
  const error = GoogleError.safeParse(body);
  if (!error.success) return `HTTP ${status}`;
  const e = error.data.error;
  return typeof e === "string" ? e : (e.status ?? e.message ?? `HTTP ${status}`);
};

/** The key's private key alone (it may be logged apart from the JSON around it, escaped or not), when the key is JSON. */
function privateKeyOf(keyText: string): string[] {
  try {
    const parsed: unknown = JSON.parse(keyText);
    const pem = parsed && typeof parsed === "object" && "private_key" in parsed && typeof parsed.private_key === "string" ? parsed.private_key : undefined;
    return pem ? [pem, JSON.stringify(pem).slice(1, -1)] : [];
  } catch {
    return [];
  }
}

/** The libraries index.js imports, with package.json's ranges. */
const libraries = { "@google-apps/chat": "^0.22.0", "google-auth-library": "^10.9.1" };
const loadAdapter = () => loadAdapterModule({ type: "googlechat", libraries }, () => import("./index.js"));

export const googleChatPlatform = definePlatform({
  type: "googlechat",
  name: "Google Chat",
  libraries,
  schema: googleChatChannelSchema,
  finalize: (channel, { id }): GoogleChatChannelConfig => ({ ...channel, id }),
  secrets: (channel) => (channel.serviceAccountKey !== undefined ? [channel.serviceAccountKey, ...privateKeyOf(channel.serviceAccountKey)] : []),
  check: checkGoogleChat,
  load: loadAdapter,
  // Several machines: every node's endpoint keeps verified events for the owner.
  receive: (channel, deps) => import("./receiver.js").then(({ startGoogleChatReceiver }) => startGoogleChatReceiver(channel, deps)),
  async create(channel, deps) {
    const { createGoogleChatAdapter } = await loadAdapter();
    return createGoogleChatAdapter(channel, deps);
  },
});
