/**
 * The Google Chat set-up the daemon tests share: the fake Google Chat for one
 * app project (its signing keys, API and certificates), the channel settings
 * pointing the real adapter at it, and a daemon started with that adapter
 * whose endpoint the fake posts events to.
 */
import { onTestFinished } from "vitest";
import type { GoogleChatChannelConfig } from "../../daemon/adapters/googlechat/config.js";
import { createGoogleChatAdapter } from "../../daemon/adapters/googlechat/index.js";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeGoogleChat, type FakeGoogleChat } from "../fakes/googlechat.js";
import type { ServiceFixture } from "./bridge.js";

/** A fake Google Chat for an app in `project`; a burst of 50 writes per space so a test's back-to-back sends fit (Chat's own is one a second). */
export const startFakeGoogleChat = (project: string): Promise<FakeGoogleChat> =>
  createFakeGoogleChat({ audienceType: "project-number", audience: project, spaceWrites: 50 });

/** {@link startFakeGoogleChat}, closed when the test finishes. */
export async function fakeGoogleChatForTest(project: string): Promise<FakeGoogleChat> {
  const fake = await startFakeGoogleChat(project);
  onTestFinished(() => fake.close());
  return fake;
}

/** Channel settings (without the id: the schema has none) for the real adapter against `fake`, its endpoint on a free port. */
export const googleChatChannelFor = (fake: FakeGoogleChat, project: string, settings: Record<string, unknown> = {}) => ({
  type: "googlechat",
  audience_type: "project-number",
  audience: project,
  serviceAccountKey: fake.serviceAccountKey,
  api: fake.url,
  certsUrl: fake.certsUrl,
  http: { port: 0 },
  ...settings,
});

/** A daemon with channel "gc" on `fake`, started, and stopped when the test finishes; `onListening` also hears the endpoint's base URL. */
export async function startGoogleChatDaemon(options: {
  service: ServiceFixture;
  fake: FakeGoogleChat;
  project: string;
  seed: number;
  settings: Record<string, unknown>;
  onListening?: (url: string) => void;
}): Promise<Daemon> {
  const { fake } = options;
  const daemon = createDaemon({
    config: options.service.configFor({ ...googleChatChannelFor(fake, options.project, options.settings), id: "gc" }),
    random: seededRandom(options.seed),
    createAdapter: (c, deps) =>
      c.type === "googlechat"
        ? Promise.resolve(
            createGoogleChatAdapter(c as GoogleChatChannelConfig, deps, {
              onListening: (url) => {
                options.onListening?.(url);
                fake.setEndpoint(`${url}/googlechat/events`);
              },
            }),
          )
        : undefined,
  });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return daemon;
}
