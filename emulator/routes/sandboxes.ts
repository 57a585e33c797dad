/** The control plane's sandbox routes (`/_emulator/sandboxes`), over the sandbox service. */
import type { EmulatorEnv } from "../env.js";
import { ApiError, conflict } from "../errors.js";
import { FixtureKeyTakenError } from "../seed/apply.js";
import { checkFixture } from "../seed/load.js";
import type { Handlers } from "../http/router.js";
import { sandboxHar } from "../sandboxes/har.js";
import type { SandboxService } from "../sandboxes/sandboxes.js";

type SandboxHandlers = Pick<
  Handlers,
  | "adminCreateSandbox"
  | "adminGetSandbox"
  | "adminDeleteSandbox"
  | "adminResetSandbox"
  | "adminSandboxRequests"
  | "adminSandboxUnmatched"
  | "adminSandboxHar"
  | "adminSandboxClock"
  | "adminSandboxCreateFault"
  | "adminUnmatched"
>;

export function sandboxHandlers(env: EmulatorEnv, sandboxes: SandboxService): SandboxHandlers {
  /** 404 for an unknown sandbox before anything else is looked at. */
  const known = (id: string) => sandboxes.get(id).id;
  return {
    async adminCreateSandbox({ body }) {
      const { fixtures, ...options } = body;
      // Checked whole before anything is made: a refused fixture leaves no sandbox behind.
      const checked = fixtures === undefined ? undefined : checkFixture(fixtures, env.store.data);
      if (checked && !checked.ok) {
        throw new ApiError(
          422,
          checked.problems.map((p) => ({ loc: ["body", "fixtures", ...p.at], msg: p.message, type: "fixture" })),
        );
      }
      const created = sandboxes.create(options);
      if (!checked) return created;
      try {
        return { ...created, fixture: await sandboxes.loadFixture(created.id, checked.fixture) };
      } catch (error) {
        sandboxes.remove(created.id);
        if (error instanceof FixtureKeyTakenError) throw conflict(error.message);
        throw error;
      }
    },
    adminGetSandbox: ({ params }) => sandboxes.get(params.sandbox_id),
    adminDeleteSandbox: ({ params }) => sandboxes.remove(params.sandbox_id),
    adminResetSandbox: ({ params }) => sandboxes.reset(params.sandbox_id),
    adminSandboxRequests({ params, query }) {
      const requests = env.journals.requests(known(params.sandbox_id), query);
      return { count: requests.length, requests };
    },
    adminSandboxHar: ({ params, query }) => sandboxHar(env, sandboxes.get(params.sandbox_id), query),
    adminSandboxUnmatched: ({ params }) => env.journals.unmatched(known(params.sandbox_id)),
    adminSandboxClock: ({ params, body }) => sandboxes.moveClock(params.sandbox_id, body),
    adminSandboxCreateFault: ({ params, body }) => env.faults.add(body, known(params.sandbox_id)),
    adminUnmatched: () => env.journals.unmatched(undefined),
  };
}
