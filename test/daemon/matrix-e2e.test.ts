/**
 * The whole chain for Matrix: a person's matrix-js-sdk client writes to the fake homeserver,
 * the daemon's adapter (built from its config) syncs it, the core journals, queues and relays it
 * to the emulator over real HTTP, and the fake model's answer comes back as a message streamed by
 * edits (`m.replace`) at the configured pace; in groups only when mentioned, as a Matrix reply,
 * with the acknowledgement reaction; a repeated delivery is answered once; a voice message is
 * answered from its transcript.
 */
import type { MatrixClient } from "matrix-js-sdk";
import { beforeAll, expect, it } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { transcriptionSchema } from "../../daemon/vocabulary/config-fields.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeMatrix, type FakeMatrix } from "../fakes/matrix.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { waitUntil } from "../helpers/wait.js";
import { personClient, say } from "./adapters/harness/matrix.js";

let service: ServiceFixture & { close(): Promise<void> };
let fake: FakeMatrix;
let daemon: Daemon;
let bot: { userId: string; token: string };
let alice: { userId: string; token: string };
let person: MatrixClient;
let dm: string;
let group: string;

beforeAll(async () => {
  service = await openServiceFixture("matrix-e2e-");
  fake = await createFakeMatrix();
  bot = fake.register("bridgebot", "Bridge Bot");
  alice = fake.register("alice", "Alice");
  const stranger = fake.register("stranger");
  person = personClient(fake, alice);
  dm = fake.createRoom(alice.userId, { direct: true, invite: [bot.userId] });
  group = fake.createRoom(alice.userId, { name: "team", invite: [bot.userId], join: [stranger.userId] });
  const config = service.configFor({
    type: "matrix",
    id: "mx",
    homeserver: fake.url,
    user_id: bot.userId,
    access_token: bot.token,
    minEditIntervalMs: 200,
    groupContext: { enabled: false },
    access: { users: [alice.userId], groups: { [group]: {} } },
  });
  // Voice messages transcribed by the emulator's fake gateway (its speech-to-text endpoint hears a text file as its text).
  const transcription = transcriptionSchema.parse({ kind: "openai", url: `${service.emulator.emulator.gateway.url}/v1`, maxBytes: 1000, maxSeconds: 120 });
  daemon = createDaemon({ config: { ...config, transcription }, clock: createSteppableClock(), random: seededRandom(7) });
  await daemon.start();
  await waitUntil(() => fake.members(dm).includes(bot.userId) && fake.members(group).includes(bot.userId), "the bot in both rooms");
  return async () => {
    await daemon.stop({ graceMs: 0 });
    await fake.close();
    await service.close();
  };
});

const shownIn = (room: string) => fake.shown(room, bot.userId).map((m) => m.body);

it("answers a direct message, streamed by paced edits of one message", async () => {
  await say(person, dm, { msgtype: "m.text", body: "!stream 1 300" });
  // The fake model streams on the emulator's clock: moved on while waiting.
  await waitUntil(
    () => {
      service.emulator.clock.advance(100);
      return shownIn(dm).some((b) => b.length >= 300);
    },
    "the whole streamed answer",
    20_000,
  );
  await daemon.whenIdle();
  // One message, edited in place.
  expect(shownIn(dm)).toHaveLength(1);
  const sends = fake.requests.filter((r) => r.user === bot.userId && r.path.includes(`/rooms/${encodeURIComponent(dm)}/send/m.room.message/`));
  expect(sends.length).toBeGreaterThan(1);
  const edits = fake.events(dm).filter((e) => (e.content["m.relates_to"] as { rel_type?: string } | undefined)?.rel_type === "m.replace");
  expect(edits.length).toBe(sends.length - 1);
  // Paced: no two sends in the chat closer than minEditIntervalMs (allowing the clock's millisecond).
  for (let i = 1; i < sends.length; i++) expect((sends[i]?.at ?? 0) - (sends[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(199);
});

it("in a group, answers only when mentioned: as a Matrix reply, with the acknowledgement reaction set and removed", async () => {
  await say(person, group, { msgtype: "m.text", body: "not for the bot" });
  const asked = await say(person, group, { msgtype: "m.text", body: "Bridge Bot: hello group", "m.mentions": { user_ids: [bot.userId] } });
  await waitUntil(() => shownIn(group).includes("You said: hello group"), "the group answer", 20_000);
  await daemon.whenIdle();
  expect(shownIn(group)).toEqual(["You said: hello group"]);
  const answer = fake.shown(group, bot.userId)[0];
  expect(answer?.event.content["m.relates_to"]).toEqual({ "m.in_reply_to": { event_id: asked } });
  // The acknowledgement was an m.annotation on the question, removed (redacted) once answered.
  const reaction = fake.events(group).find((e) => e.type === "m.reaction" && e.sender === bot.userId);
  expect(reaction).toBeDefined();
  await waitUntil(() => fake.reactions(group, asked, bot.userId).length === 0, "the reaction removed");
});

it("answers a message the homeserver delivers twice only once", async () => {
  const id = await say(person, dm, { msgtype: "m.text", body: "say it once" });
  await waitUntil(() => shownIn(dm).includes("You said: say it once"), "the answer", 20_000);
  fake.repeat(bot.userId, id);
  await say(person, dm, { msgtype: "m.text", body: "and then this" });
  await waitUntil(() => shownIn(dm).includes("You said: and then this"), "the next answer", 20_000);
  await daemon.whenIdle();
  expect(shownIn(dm).filter((b) => b === "You said: say it once")).toHaveLength(1);
});

it("answers a voice message from its transcript", async () => {
  const audio = Buffer.from("remind me to water the plants");
  const upload = await person.uploadContent(audio, { name: "Voice message.ogg", type: "audio/ogg" });
  await say(person, dm, {
    msgtype: "m.audio",
    body: "Voice message.ogg",
    url: upload.content_uri,
    info: { mimetype: "audio/ogg", size: audio.length, duration: 3000 },
    "org.matrix.msc1767.audio": { duration: 3000 },
    "org.matrix.msc3245.voice": {},
  });
  const reply = await waitUntil(
    () => shownIn(dm).find((b) => b.includes("Transcript of") && b.includes("water the plants")),
    "the answer from the transcript",
    20_000,
  );
  expect(reply).toContain(`Transcript of the person's voice note "Voice message.ogg"`);
  expect(reply).toContain("remind me to water the plants");
});
