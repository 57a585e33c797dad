/**
 * The whole chain: a WhatsApp message (Baileys-shaped, from the fake socket)
 * goes through the adapter, the daemon's access rules, journal, queue and
 * relay to the emulator over real HTTP, and the fake model's answer comes
 * back through `sendMessage` to the chat it came from.
 */
import { expect, it, onTestFinished, vi } from "vitest";
import { createWhatsAppAdapter } from "../../daemon/adapters/whatsapp/index.js";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeBaileys, directByLid, directByPhone, groupText, lidJid, pnJid } from "../fakes/baileys-socket.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { exerciseQueueModes } from "../helpers/queue-modes.js";
import { testHandle } from "../../daemon/test-handle.js";
import { Writable } from "node:stream";
import { pino } from "pino";

const ANA = "4915111111111";
const LIA_LID = "210000000000042";
const LIA_PHONE = "4917622222222";
const GROUP = "120363000000000001@g.us";

type ServiceFixture = Awaited<ReturnType<typeof startServiceFixture>>;

/** The daemon with one WhatsApp channel on the fake device, started and connected; stopped after the test. */
async function startBridge(service: ServiceFixture, config: ReturnType<ServiceFixture["configFor"]>, [adapterSeed, daemonSeed]: [number, number]) {
  const channel = config.channels[0];
  if (channel?.type !== "whatsapp") throw new Error("expected a whatsapp channel");
  const logger = pino({ level: "silent" });
  const fake = createFakeBaileys();
  const adapter = createWhatsAppAdapter(
    channel,
    {
      logger,
      state: { get: () => undefined, set: async () => undefined },
      dataDir: service.dataDir,
      clock: systemClock,
      maxAttachmentBytes: config.attachments.maxBytes,
    },
    { socketFactory: fake.factory, qrOutput: new Writable({ write: (_c, _e, cb) => cb() }), random: seededRandom(adapterSeed) },
  );
  const daemon: Daemon = createDaemon({ config, adapters: [adapter], logger, random: seededRandom(daemonSeed) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  const started = daemon.start();
  await vi.waitFor(() => expect(fake.sockets).toHaveLength(1));
  const socket = fake.latest();
  socket.open();
  await started;
  return { daemon, fake, socket };
}

it("relays a WhatsApp message to the agent and sends its reply back to the same chat", async () => {
  const service = await startServiceFixture("wa-e2e-");
  // About the answer itself: the reaction and group context (whatsapp-group.test.ts) stay out of `sent` and the echo.
  const config = service.configFor({
    type: "whatsapp",
    id: "wa",
    ackReaction: { scope: "off" },
    groupContext: { enabled: false },
    access: { users: [`+${ANA}`, `+${LIA_PHONE}`], groups: { [GROUP]: {} } },
  });
  const { socket, fake, daemon } = await startBridge(service, config, [3, 4]);

  // A listed person by phone; a listed person arriving by @lid with the phone as alt;
  // an unlisted stranger; an unmentioned group message; a mention in the listed group.
  socket.receive([directByPhone(ANA, "hello agent")]);
  socket.receive([directByLid(LIA_LID, "hi from lid", { phoneAlt: LIA_PHONE })]);
  socket.receive([directByPhone("4915999999999", "let me in")]);
  socket.receive([groupText(GROUP, pnJid(ANA), "not for the bot")]);
  socket.receive([groupText(GROUP, pnJid(ANA), `@${fake.account.lid} in the group`, { mentions: [lidJid(fake.account.lid)] })]);

  await vi.waitFor(() => expect(socket.sent).toHaveLength(3), { timeout: 10_000 });
  await daemon.whenIdle();
  const byJid = new Map(socket.sent.map((s) => [s.jid, s.content.text]));
  expect(byJid.get(pnJid(ANA))).toBe("You said: hello agent");
  expect(byJid.get(lidJid(LIA_LID))).toBe("You said: hi from lid");
  expect(byJid.get(GROUP)).toBe("You said: in the group");
  expect(byJid.has(pnJid("4915999999999"))).toBe(false);
  // Each admitted message was marked read once journaled; the stranger's stays unread.
  expect(
    socket.reads
      .flat()
      .map((k) => k.remoteJid)
      .sort(),
  ).toEqual([GROUP, lidJid(LIA_LID), pnJid(ANA)].sort());
  // The bot's own sends came back as "append" upserts and were not answered.
  expect(socket.sent).toHaveLength(3);
});

it("queue modes: /queue collect answers what came meanwhile as one turn; /queue interrupt stops the answer for the newer message", async () => {
  const service = await startServiceFixture("wa-queue-");
  const config = service.configFor({ type: "whatsapp", id: "wa", ackReaction: { scope: "off" }, access: { users: [`+${ANA}`] } });
  const { socket, daemon } = await startBridge(service, config, [5, 6]);
  await exerciseQueueModes({
    service,
    send: (text) => socket.receive([directByPhone(ANA, text)]),
    replies: () => socket.sent.filter((s) => s.jid === pnJid(ANA)).map((s) => s.content.text ?? ""),
    queued: () => testHandle(daemon).scheduler?.depth().totalWaiting ?? 0,
  });
});
