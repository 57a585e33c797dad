/**
 * The service half of a platform end-to-end test: an emulator listening on
 * loopback with an organization and a running instance, a temporary daemon
 * data directory, and a daemon config around the test's one channel.
 */
import { onTestFinished } from "vitest";
import { daemonConfigSchema, type DaemonConfig } from "../../daemon/config/schema.js";
import { createManualClock, type ManualClock } from "../../shared/clock.js";
import { runningInstance, signupOrg, startEmulator, tempDir, type TestEmulator } from "./emulator.js";

export interface ServiceFixture {
  emulator: TestEmulator;
  baseUrl: string;
  instanceId: string;
  dataDir: string;
  /** A validated daemon config: one route to the instance, this channel, quiet logs, no ops port, no debounce. */
  configFor(channel: Record<string, unknown>): DaemonConfig;
  /**
   * Resolves when the fake model next starts a wait of `ms` (`!sleep ms`): the turn is then out at
   * the service, and stays there until the test moves the emulator's clock (`emulator.clock.advance`).
   * Call it before sending the message.
   */
  nextSleep(ms: number): Promise<void>;
}

/** A fixture for the test that asks for it: closed and removed when that test finishes. */
export async function startServiceFixture(dirPrefix: string): Promise<ServiceFixture> {
  const fixture = await openServiceFixture(dirPrefix);
  onTestFinished(fixture.close);
  return fixture;
}

/** A fixture for a whole file: `beforeAll` returns its `close`, so the runner calls it after the last test. */
export async function openServiceFixture(dirPrefix: string): Promise<ServiceFixture & { close(): Promise<void> }> {
  // The emulator's manual clock, its waits announced to `nextSleep`.
  const manual = createManualClock();
  const sleepers: { ms: number; resolve(): void }[] = [];
  const clock: ManualClock = {
    ...manual,
    sleep(ms, signal) {
      for (const w of sleepers.filter((x) => x.ms === ms)) {
        sleepers.splice(sleepers.indexOf(w), 1);
        w.resolve();
      }
      return manual.sleep(ms, signal);
    },
  };
  const emulator = await startEmulator({ clock });
  const baseUrl = await emulator.emulator.listen(0, "127.0.0.1");
  const org = await signupOrg(emulator.app);
  const instance = await runningInstance(emulator, org);
  const dir = tempDir(dirPrefix);
  return {
    async close() {
      dir.remove();
      await emulator.close();
    },
    emulator,
    baseUrl,
    instanceId: instance.id,
    dataDir: dir.path,
    nextSleep: (ms) => new Promise<void>((resolve) => sleepers.push({ ms, resolve })),
    configFor: (channel) =>
      daemonConfigSchema.parse({
        service: { baseUrl, apiKey: org.apiKey },
        dataDir: dir.path,
        logLevel: "silent",
        ops: { port: null },
        queue: { debounceMs: 0 },
        routes: [{ instance: instance.id }],
        channels: [channel],
      }),
  };
}
