/**
 * A fresh sandbox for every test, removed after it (also when it failed),
 * on whatever hooks the framework has: each framework's module passes its
 * own `beforeEach`/`afterEach`.
 */
import { createSandbox, type CreateSandboxOptions, type RemoteSandbox } from "./remote-sandbox.js";

export interface SandboxPerTestOptions extends Partial<Omit<CreateSandboxOptions, "url">> {
  /** The emulator's URL. Default: what the framework's global setup provided, else the AGENT_BRIDGE_URL environment variable. */
  url?: string;
}

type Hook = (fn: () => Promise<void>) => void;

/** Registers the hooks; the returned function gives the current test's sandbox. */
export function sandboxPerTest(hooks: { beforeEach: Hook; afterEach: Hook }, url: () => string, options: SandboxPerTestOptions = {}): () => RemoteSandbox {
  let current: RemoteSandbox | undefined;
  hooks.beforeEach(async () => {
    current = await createSandbox({ ...options, url: url() });
  });
  hooks.afterEach(async () => {
    const done = current;
    current = undefined;
    await done?.remove();
  });
  return () => {
    if (!current) throw new Error("No sandbox here: call the sandbox getter inside a test (it is made before each test and removed after it).");
    return current;
  };
}

/** The URL from the environment, with a sentence when it is missing. */
export function urlFromEnv(): string {
  const url = process.env.AGENT_BRIDGE_URL;
  if (!url) throw new Error("AGENT_BRIDGE_URL is not set: start the emulator in a global setup (agent-bridge/testing) or pass { url }.");
  return url;
}
