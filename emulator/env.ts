/**
 * Everything a route handler may use, passed explicitly: the store, time,
 * randomness, the gateway hop, the fault rules, and the emulator's settings.
 */
import type { Dispatcher } from "undici";
import type { Clock } from "../shared/clock.js";
import type { Random } from "../shared/random.js";
import type { FakeGateway } from "./gateway/index.js";
import type { FaultRegistry } from "./faults.js";
import type { SandboxClocks } from "./sandboxes/clock.js";
import type { SandboxJournals } from "./sandboxes/journal.js";
import type { Store } from "./store/store.js";
import type { InstanceRecord } from "./store/state.js";
import type { Workspaces } from "./workspace/workspaces.js";

export interface EmulatorSettings {
  provisionMs: number;
  /** Largest upload accepted, bytes. */
  uploadLimitBytes: number;
  /** Longest wait for the gateway before a 502, ms. */
  gatewayTimeoutMs: number;
  /** New instances use this gateway instead of the bundled one. */
  gatewayUrl: string | undefined;
  /** Required as a bearer on `/_emulator` when set. */
  adminToken: string | undefined;
  /** The host the API listens on, once listening: a `Host` header naming it passes the control plane's host check. */
  listenHost?: string;
  /** Where instance workspaces live (a temporary folder for in-memory emulators). */
  workspaceRoot: string;
  version: string;
}

export interface EmulatorEnv {
  store: Store;
  /** The current sandbox's time inside a sandbox's request, the base clock elsewhere. */
  clock: Clock;
  /** Which sandbox a request runs in, and each sandbox's timers. */
  sandboxClocks: SandboxClocks;
  /** Each sandbox's requests and unmatched requests. */
  journals: SandboxJournals;
  random: Random;
  gateway: FakeGateway;
  faults: FaultRegistry;
  settings: EmulatorSettings;
  /** Each instance's file tree on disk. */
  workspaces: Workspaces;
  /** One keep-alive pool for every gateway hop. */
  gatewayDispatcher: Dispatcher;
  /** The emulator's own public base URL once listening (billing links), else a placeholder. */
  publicUrl(): string;
  /** Gateway base for an instance: its override or the bundled gateway. */
  gatewayUrlOf(instance: InstanceRecord): string;
  /** Brings a provisioning instance to `running`/`error` when its time has come. */
  settle(instance: InstanceRecord): InstanceRecord;
}
