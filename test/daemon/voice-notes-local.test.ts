/**
 * Real speech, recognised on this machine: Debian's espeak-ng says a sentence
 * into a WAV file, the person sends it as a Telegram voice note, and the
 * bridge's local `transcription.command` (pocketsphinx, with a small grammar
 * so recognition of synthetic speech is exact) turns it back into the text the
 * agent answers. `.ci/run` installs espeak-ng, sox, pocketsphinx and its model.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { expect, it, onTestFinished } from "vitest";
import { transcriptionSchema } from "../../daemon/vocabulary/config-fields.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { waitUntil } from "../helpers/wait.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";
import { lacks } from "../helpers/system-programs.js";

const noSpeech = lacks("speech", import.meta.url);

const alice = { id: 5001, username: "alice" };
const helpers = join(import.meta.dirname, "../helpers");

it.skipIf(noSpeech)("hears a spoken voice note with pocketsphinx and answers from what was said", { timeout: 60_000 }, async () => {
  const speech = execFileSync("espeak-ng", ["-v", "en-us", "-s", "130", "--stdout", "turn on the kitchen lights"]);
  const service = await startServiceFixture("voice-local-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const config = {
    ...service.configFor({
      type: "telegram",
      id: "tg",
      token: TELEGRAM_BOT_TOKEN,
      apiRoot: fake.url,
      streaming: "off",
      setCommands: false,
      access: { users: [String(alice.id)] },
    }),
    transcription: transcriptionSchema.parse({
      kind: "command",
      command: ["sh", join(helpers, "pocketsphinx-transcribe.sh"), join(helpers, "commands.gram"), "{file}"],
    }),
  };
  const daemon = createDaemon({ config, random: seededRandom(9) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  fake.voice(alice, speech, 2);
  const reply = await waitUntil(() => fake.sentMessages(alice.id)[0]?.text, "the answer", 45_000);
  expect(reply).toMatch(/Transcript of the person's voice note "voice-\d+\.ogg"[^\n]*\nturn on the kitchen lights\n\[End of transcript\]/);
});
