/**
 * The in-process face of sandboxes: `emulator.sandboxes.create()` returns a
 * handle a test keeps, with the sandbox's key and what it needs to assert on
 * (its journal, its unmatched requests) and to drive it (its clock, its fault
 * rules, reset, remove). Matchers such as `expect(sandbox).toHaveReceived(...)`
 * are meant to be built on `requests(filter)`. Writes resolve once on disk,
 * as the same calls over HTTP are answered.
 */
import type { z } from "zod";
import type { FaultRule, FaultRuleRequest } from "../../shared/schemas/admin.js";
import type { EmulatorEnv } from "../env.js";
import { describeProblems, parseScript } from "../gateway/script/load.js";
import type { ScriptRegistry } from "../gateway/script/registry.js";
import type { ModelScriptInput } from "../gateway/script/schema.js";
import type { LoadedFixture } from "../../shared/schemas/sandboxes.js";
import { checkFixture, describeFixtureProblems } from "../seed/load.js";
import type { FixtureInput } from "../seed/schema.js";
import type { Har } from "../../shared/schemas/har.js";
import { sandboxHar } from "./har.js";
import type { RequestFilter, SandboxRequestEntry, UnmatchedEntry } from "./journal.js";
import type { ClockMove, SandboxService, SandboxView } from "./sandboxes.js";

export interface SandboxCreateOptions {
  /** A label for people reading the journal (default: the sandbox's id). */
  name?: string;
  /** Where the sandbox's clock starts, ISO (default: the emulator's clock now). */
  clockStart?: string;
  /** A fixture loaded into it (docs/emulator.md, "Fixtures"); one with an error throws, naming each problem's place, and no sandbox is made. Default: none. */
  fixtures?: FixtureInput;
}

export interface SandboxHandle {
  /** `sbx_...`. */
  readonly id: string;
  /** The organization key of the sandbox's first organization (`Authorization: Bearer ...`). */
  readonly apiKey: string;
  readonly organizationId: string;
  /** What its fixture made, by the names the fixture gave (with `fixtures`). */
  readonly fixture?: LoadedFixture;
  /** The requests it received, oldest first, filtered by method, path, route, status, instance and session. */
  requests(filter?: RequestFilter): SandboxRequestEntry[];
  /** How many requests match `filter` (all it received without one, also those no longer kept). */
  count(filter?: RequestFilter): number;
  /** Its requests that matched no route, a wrong method or an unknown key, with the closest route. */
  unmatched(): UnmatchedEntry[];
  /** Its requests as an HTTP Archive (HAR 1.2), bodies redacted as the journal keeps them (`GET .../requests.har`). */
  har(filter?: RequestFilter): Har;
  /** Moves its clock forward; resolves with what the move made happen. */
  advance(ms: number): Promise<ClockMove>;
  /** Sets its clock to a later time (ISO or epoch ms). */
  setClock(to: string | number): Promise<ClockMove>;
  /**
   * Sets its model script: rules its instances' requests try after an
   * instance's own script and before the global one. Throws, naming each
   * problem's place, when the script is refused (the one in force stays).
   */
  setModelScript(script: ModelScriptInput): void;
  /** Removes its model script. */
  clearModelScript(): void;
  /** Adds a fault rule that fires on its requests only. */
  addFault(rule: z.input<typeof FaultRuleRequest>): FaultRule;
  /** Its state now: organizations, instance and request counts, clock. */
  info(): SandboxView;
  /** Back to how it was created: the first organization and key stay, everything else goes. */
  reset(): Promise<void>;
  /** Removes it and everything in it. */
  remove(): Promise<void>;
}

export interface SandboxesApi {
  create(options?: SandboxCreateOptions): Promise<SandboxHandle>;
  /** A handle for a sandbox made elsewhere (over HTTP); 404 error when unknown. */
  get(id: string, apiKey: string): SandboxHandle;
}

export function sandboxesApi(env: EmulatorEnv, service: SandboxService, scripts: ScriptRegistry): SandboxesApi {
  const handle = (id: string, apiKey: string, organizationId: string, fixture?: LoadedFixture): SandboxHandle => {
    const durable = async <T>(value: T) => {
      await env.store.durable();
      return value;
    };
    return {
      id,
      apiKey,
      organizationId,
      ...(fixture ? { fixture } : {}),
      requests: (filter) => env.journals.requests(id, filter),
      count: (filter) => (filter ? env.journals.requests(id, filter).length : env.journals.count(id)),
      unmatched: () => env.journals.unmatched(id),
      har: (filter) => sandboxHar(env, service.get(id), filter),
      advance: (ms) => durable(service.moveClock(id, { advance_ms: ms })),
      setClock: (to) => durable(service.moveClock(id, { set: new Date(to).toISOString() })),
      setModelScript(script) {
        const sandboxId = service.get(id).id;
        const loaded = parseScript(script);
        if (!loaded.ok) throw new Error(`The model script for sandbox ${id} was refused:\n${describeProblems(loaded.problems)}`);
        scripts.set({ kind: "sandbox", sandboxId }, loaded.script);
      },
      clearModelScript: () => scripts.clear({ kind: "sandbox", sandboxId: service.get(id).id }),
      addFault: (rule) => env.faults.add({ ...rule }, service.get(id).id),
      info: () => service.get(id),
      reset: () => durable(void service.reset(id)),
      remove: () => durable(void service.remove(id)),
    };
  };
  return {
    async create(options = {}) {
      const checked = options.fixtures === undefined ? undefined : checkFixture(options.fixtures, env.store.data);
      if (checked && !checked.ok) throw new Error(`The sandbox's fixture was refused:\n${describeFixtureProblems(checked.problems)}`);
      const created = service.create({ name: options.name, clock_start: options.clockStart });
      const fixture = checked && (await service.loadFixture(created.id, checked.fixture));
      await env.store.durable();
      return handle(created.id, created.api_key, created.organization_id, fixture);
    },
    get: (id, apiKey) => handle(id, apiKey, service.get(id).organization_id),
  };
}
