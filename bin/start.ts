/**
 * `agent-bridge start` (`npm start`): everything local, no configuration. Runs the emulator in this
 * process (state in `.data/emulator`), signs up a local organization once,
 * gives it a placeholder provider key, creates an instance, mints a scoped
 * key for the bridge, and opens the terminal chat on stdin/stdout. Ids and
 * keys are kept in `.data/credentials.json` (mode 0600, never printed), so a
 * second start talks to the same organization and instance. The ops server
 * (the operator's console at /ui/, /healthz, /metrics) listens on a free
 * port, printed at start. Arguments
 * are parsed by bin/program.ts.
 */
import { chmod, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { createEmulator, type Emulator } from "../emulator/index.js";
import { ServiceError, createServiceClient, type ServiceClient } from "../shared/client/index.js";
import { systemClock, type Clock } from "../shared/clock.js";
import type { TerminalAdapter } from "../daemon/adapters/terminal/index.js";
import { runInForeground } from "../daemon/cli.js";
import { parseConfig } from "../daemon/config/load.js";
import { writeFileAtomic } from "../shared/durable-files.js";

const PLACEHOLDER_PROVIDER_KEY = "sk-ant-local-placeholder-not-a-real-key";

export const Credentials = z.object({
  version: z.literal(1),
  organizationId: z.string(),
  orgKey: z.string(),
  instanceId: z.string().optional(),
  scopedKeyId: z.string().optional(),
  scopedKey: z.string().optional(),
});
export type Credentials = z.infer<typeof Credentials>;

async function readCredentials(file: string): Promise<Credentials | undefined> {
  try {
    const parsed = Credentials.safeParse(JSON.parse(await readFile(file, "utf8")));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function saveCredentials(file: string, creds: Credentials): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(creds, null, 2)}\n`, 0o600);
  await chmod(file, 0o600); // an older file may have had other bits
}

/** The service itself answered one of these statuses. */
const isStatus = (error: unknown, ...statuses: number[]) => error instanceof ServiceError && error.kind === "service" && statuses.includes(error.status ?? 0);

export interface Bootstrap {
  creds: Required<Credentials>;
  reusedOrganization: boolean;
  reusedInstance: boolean;
}

/** Finds or makes the organization, instance and scoped key; waits until the instance runs (polled on `clock`, default the system's). */
export async function bootstrap(anon: ServiceClient, file: string, clock: Clock = systemClock): Promise<Bootstrap> {
  let creds = await readCredentials(file);
  let reusedOrganization = false;
  if (creds) {
    try {
      await anon.withKey(creds.orgKey).getOrganization();
      reusedOrganization = true;
    } catch (error) {
      if (!isStatus(error, 401, 403, 404)) throw error;
      creds = undefined; // the emulator's state was wiped: start over
    }
  }
  if (!creds) {
    const signup = await anon.signup({ body: { name: "local" } });
    creds = { version: 1, organizationId: signup.organization.id, orgKey: signup.api_key };
    await saveCredentials(file, creds);
    await anon.withKey(creds.orgKey).updateOrganization({ body: { model_api_keys: { anthropic: PLACEHOLDER_PROVIDER_KEY } } });
  }
  const org = anon.withKey(creds.orgKey);

  let reusedInstance = false;
  if (creds.instanceId) {
    try {
      const inst = await org.getInstance({ instance_id: creds.instanceId });
      reusedInstance = inst.status !== "error" && inst.status !== "terminated";
    } catch (error) {
      if (!isStatus(error, 403, 404)) throw error;
    }
  }
  if (!reusedInstance) {
    if (creds.instanceId) {
      // A broken instance would still count against the plan's limit of one.
      await org.deleteInstance({ instance_id: creds.instanceId }).catch(() => undefined);
    }
    const inst = await org.createInstance({ body: { name: "local-agent" } });
    creds = { ...creds, instanceId: inst.id, scopedKey: undefined, scopedKeyId: undefined };
    await saveCredentials(file, creds);
  }
  const instanceId = creds.instanceId!;

  let keyOk = false;
  if (creds.scopedKeyId && creds.scopedKey) {
    try {
      const key = await org.getKey({ key_id: creds.scopedKeyId });
      keyOk = key.is_active && key.instances.some((g) => g.instance_id === instanceId && g.permissions.includes("interact"));
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
    }
  }
  if (!keyOk) {
    const key = await org.createKey({ body: { name: "local-bridge", instance_ids: [instanceId], permissions: ["interact", "read", "files"] } });
    creds = { ...creds, scopedKeyId: key.id, scopedKey: key.raw_key };
    await saveCredentials(file, creds);
  }

  await waitUntilRunning(org, instanceId, clock);
  return { creds: creds as Required<Credentials>, reusedOrganization, reusedInstance };
}

/** How often `waitUntilRunning` looks, and how long it waits in all, ms. */
const POLL_MS = 100;
const START_TIMEOUT_MS = 60_000;

/** Polls the instance until it runs, starting it when it is stopped; throws when it cannot run or takes longer than a minute. */
async function waitUntilRunning(org: ServiceClient, instanceId: string, clock: Clock): Promise<void> {
  const deadline = clock.now() + START_TIMEOUT_MS;
  for (;;) {
    const { status } = await org.getInstanceStatus({ instance_id: instanceId });
    if (status === "running") return;
    if (status === "stopped") await org.startInstance({ instance_id: instanceId }).catch(() => undefined);
    if (status === "error" || status === "terminated" || clock.now() > deadline) throw new Error(`the local instance did not start (status: ${status})`);
    await clock.sleep(POLL_MS);
  }
}

export interface StartOptions {
  /** Where state lives: emulator/, daemon/, credentials.json. */
  dataDir: string;
  /** Emulator port; 0 picks a free one. */
  port: number;
}

/** Runs the emulator and the bridge with a terminal chat until the person quits; resolves with the exit code. */
export async function startLocal(options: StartOptions): Promise<number> {
  const port = options.port;
  const dataDir = resolve(options.dataDir);
  const credentialsFile = join(dataDir, "credentials.json");

  let emulator: Emulator;
  try {
    emulator = await createEmulator({ dataDir: join(dataDir, "emulator"), provisionMs: 500 });
  } catch (error) {
    process.stderr.write(`start: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  let url: string;
  let boot: Bootstrap;
  try {
    url = await emulator.listen(port, "127.0.0.1");
    boot = await bootstrap(createServiceClient({ baseUrl: url }), credentialsFile);
  } catch (error) {
    process.stderr.write(`start: ${error instanceof Error ? error.message : String(error)}\n`);
    await emulator.close();
    return 1;
  }

  const config = parseConfig(
    {
      service: { baseUrl: url, apiKey: boot.creds.scopedKey, defaultModel: "claude-sonnet-4-5" },
      dataDir: join(dataDir, "daemon"),
      logLevel: process.env.LOG_LEVEL ?? "warn",
      // A free port: a fixed one could clash with another local run.
      ops: { port: 0 },
      queue: { debounceMs: 0 },
      routes: [{ match: {}, instance: boot.creds.instanceId }],
      channels: [{ type: "terminal", id: "terminal" }],
      // The agent may ask a choice or a confirmation (`!ask`, `!confirm`): a numbered list in the terminal.
      buttons: { tools: ["choice", "confirm"] },
      // Offline: voice notes are heard by the emulator's fake gateway (docs/emulator.md, Transcription).
      transcription: { kind: "openai", url: `${emulator.gateway.url}/v1` },
    },
    {},
    "(npm start)",
  );

  process.stdout.write(
    [
      "agent-bridge: local mode (emulated service, terminal chat)",
      `  service    ${url}  (emulator; state in ${join(dataDir, "emulator")})`,
      `  emulator   ${url}/_emulator/ui/instances/${boot.creds.instanceId}  (the emulator's console: conversations, requests, faults)`,
      `  org        ${boot.creds.organizationId}  (${boot.reusedOrganization ? "reused" : "new"})`,
      `  instance   ${boot.creds.instanceId}  (${boot.reusedInstance ? "reused" : "new"}, running)`,
      "Type a message and press Enter. /help lists commands; Ctrl+D or Ctrl+C quits.",
      "",
    ].join("\n"),
  );
  return runInForeground(config, {
    beforeExit: () => emulator.close(),
    onStarted(daemon) {
      if (!daemon.opsUrl) return;
      const lines = [
        ...(config.ops.console ? [`  console    ${daemon.opsUrl}/ui/  (the bridge's operator console: chats, pairing, live activity)`] : []),
        `  ops        ${daemon.opsUrl}/healthz  ${daemon.opsUrl}/metrics`,
      ];
      const chat = daemon.adapters.find((a) => a.platform === "terminal") as Partial<TerminalAdapter> | undefined;
      for (const line of lines) {
        if (chat?.notice) chat.notice(line);
        else process.stdout.write(`${line}\n`);
      }
    },
  });
}
