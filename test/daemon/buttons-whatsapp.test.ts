/**
 * Questions on WhatsApp, which gives bots no buttons of its own to tap (a
 * linked device cannot send interactive messages): the agent's question
 * arrives as a numbered list on the fake device (Baileys behind its socket),
 * and the person's typed number, or the option's word, goes back to the agent
 * as the call's output on the same chain. Real emulator, real daemon.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { expect, it, onTestFinished, vi } from "vitest";
import { createWhatsAppAdapter } from "../../daemon/adapters/whatsapp/index.js";
import { createDaemon } from "../../daemon/daemon.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeBaileys, directByPhone, pnJid } from "../fakes/baileys-socket.js";
import { startServiceFixture } from "../helpers/bridge.js";

const ANA = "4915111111111";

async function bridge() {
  const service = await startServiceFixture("buttons-wa-");
  const config = service.configFor({
    type: "whatsapp",
    id: "wa",
    ackReaction: { scope: "off" },
    groupContext: { enabled: false },
    access: { users: [`+${ANA}`] },
    buttons: { tools: ["choice", "confirm"] },
  });
  const channel = config.channels[0];
  if (channel?.type !== "whatsapp") throw new Error("expected a whatsapp channel");
  const fake = createFakeBaileys();
  const adapter = createWhatsAppAdapter(
    channel,
    {
      logger: pino({ level: "silent" }),
      state: { get: () => undefined, set: async () => undefined },
      dataDir: service.dataDir,
      clock: systemClock,
      maxAttachmentBytes: 1024 * 1024,
    },
    { socketFactory: fake.factory, qrOutput: new Writable({ write: (_c, _e, cb) => cb() }), random: seededRandom(1) },
  );
  const daemon = createDaemon({ config, adapters: [adapter], logger: pino({ level: "silent" }), random: seededRandom(2) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  const started = daemon.start();
  await vi.waitFor(() => expect(fake.sockets).toHaveLength(1));
  const socket = fake.latest();
  socket.open();
  await started;
  const texts = () => socket.sent.filter((s) => s.jid === pnJid(ANA)).map((s) => s.content.text ?? "");
  return { socket, texts };
}

it("a choice: a numbered list, the typed number is the answer, the agent's next answer follows", async () => {
  const { socket, texts } = await bridge();
  socket.receive([directByPhone(ANA, "!ask Deploy where? | staging | production")]);
  await vi.waitFor(() => expect(texts().join("\n")).toContain("Deploy where?\n1. staging\n2. production\nReply with a number."));
  socket.receive([directByPhone(ANA, "2")]);
  await vi.waitFor(() => expect(texts().some((t) => /returned: production/.test(t))).toBe(true));
  expect(texts().filter((t) => /returned:/.test(t))).toHaveLength(1);
});

it("a confirmation answered by its word", async () => {
  const { socket, texts } = await bridge();
  socket.receive([directByPhone(ANA, "!confirm Send the report to Ann")]);
  await vi.waitFor(() => expect(texts().join("\n")).toContain("Send the report to Ann\n1. Approve\n2. Deny"));
  socket.receive([directByPhone(ANA, "approve")]);
  await vi.waitFor(() => expect(texts().some((t) => /returned: approved/.test(t))).toBe(true));
});
