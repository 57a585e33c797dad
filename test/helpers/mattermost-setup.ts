/** The Mattermost bridge the daemon tests share: the fake Mattermost (closed when the test finishes) and a launcher of daemons on its channel "mm". */
import { onTestFinished } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeMattermost } from "../fakes/mattermost.js";
import type { ServiceFixture } from "./bridge.js";

type FakeOptions = Parameters<typeof createFakeMattermost>[0];

/** The fake with `fakeOptions`, the channel with the bot's token (no group context) plus `settings`; each `launch(seed)` starts a daemon, stopped at the test's end. */
export async function mattermostBridge(service: ServiceFixture, fakeOptions: FakeOptions, settings: Record<string, unknown>) {
  const fake = await createFakeMattermost(fakeOptions);
  onTestFinished(() => fake.close());
  const config = service.configFor({
    type: "mattermost",
    id: "mm",
    bot_token: fakeOptions.token,
    base_url: fake.baseUrl,
    groupContext: { enabled: false },
    ...settings,
  });
  const launch = async (seed: number): Promise<Daemon> => {
    const daemon = createDaemon({ config, random: seededRandom(seed) });
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    await daemon.start();
    return daemon;
  };
  return { fake, launch };
}
