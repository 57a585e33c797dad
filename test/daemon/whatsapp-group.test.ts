/**
 * WhatsApp beyond the answer (issue #20), through the adapter on the fake
 * Baileys socket and the emulator over real HTTP: unaddressed group messages
 * as context for the next mention, the 👀 reaction (a `react` message keyed
 * to the sender's message) set and cleared, and a file the agent made sent
 * as an image or a document, quoting the question.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { expect, it, onTestFinished, vi } from "vitest";
import { createWhatsAppAdapter } from "../../daemon/adapters/whatsapp/index.js";
import { CONTEXT_HEADER } from "../../daemon/core/group-context.js";
import { createDaemon } from "../../daemon/daemon.js";
import { systemClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeBaileys, groupText, lidJid, pnJid, type SentRecord } from "../fakes/baileys-socket.js";
import { startServiceFixture } from "../helpers/bridge.js";

const ANA = "4915111111111";
const BEN = "4915122222222";
const GROUP = "120363000000000001@g.us";

async function bridge() {
  const service = await startServiceFixture("wa-group-");
  const config = service.configFor({ type: "whatsapp", id: "wa", access: { users: [`+${ANA}`, `+${BEN}`], groups: { [GROUP]: {} } } });
  const channel = config.channels[0];
  if (channel?.type !== "whatsapp") throw new Error("expected a whatsapp channel");
  const logger = pino({ level: "silent" });
  const fake = createFakeBaileys();
  const deps = {
    logger,
    state: { get: () => undefined, set: async () => undefined },
    dataDir: service.dataDir,
    clock: systemClock,
    maxAttachmentBytes: 1 << 20,
  };
  const adapter = createWhatsAppAdapter(channel, deps, {
    socketFactory: fake.factory,
    qrOutput: new Writable({ write: (_c, _e, cb) => cb() }),
    random: seededRandom(3),
  });
  const daemon = createDaemon({ config, adapters: [adapter], logger, random: seededRandom(4) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  const started = daemon.start();
  await vi.waitFor(() => expect(fake.sockets).toHaveLength(1));
  const socket = fake.latest();
  socket.open();
  await started;
  const mention = (from: string, text: string) => groupText(GROUP, pnJid(from), `@${fake.account.lid} ${text}`, { mentions: [lidJid(fake.account.lid)] });
  return { socket, daemon, mention };
}

const texts = (sent: SentRecord[]) => sent.flatMap((s) => (s.content.text === undefined ? [] : [s.content.text]));
const reactions = (sent: SentRecord[]) => sent.flatMap((s) => ("react" in s.content ? [{ text: s.content.react.text, id: s.content.react.key.id }] : []));

it("sends unaddressed group messages as context with the next mention, and reacts 👀 until answered", async () => {
  const { socket, daemon, mention } = await bridge();
  socket.receive([groupText(GROUP, pnJid(ANA), "shall we ship today?", { pushName: "Ana" })]);
  socket.receive([groupText(GROUP, pnJid(BEN), "tests are green", { pushName: "Ben" })]);
  const asked = mention(ANA, "what do you say?");
  socket.receive([asked]);
  await vi.waitFor(() => expect(texts(socket.sent)).toHaveLength(1), { timeout: 10_000 });
  await daemon.whenIdle();
  expect(texts(socket.sent)[0]).toMatch(
    new RegExp(
      `^You said: ${CONTEXT_HEADER.replace(/[()]/g, "\\$&")}\\n\\[.+\\] shall we ship today\\?\\n\\[.+\\] tests are green\\n\\nAddressed to you by \\[.+\\]:\\nwhat do you say\\?$`,
    ),
  );
  await vi.waitFor(() => expect(reactions(socket.sent)).toHaveLength(2));
  expect(reactions(socket.sent)).toEqual([
    { text: "👀", id: asked.key.id },
    { text: "", id: asked.key.id },
  ]);
  expect(socket.reactions.size).toBe(0);
});

it("sends a picture the agent made as an image, and a report as a document, quoting the question", async () => {
  const { socket, daemon, mention } = await bridge();
  const asked = mention(ANA, "!file chart.png");
  socket.receive([asked]);
  await vi.waitFor(() => expect(socket.sent.some((s) => "image" in s.content)).toBe(true), { timeout: 10_000 });
  socket.receive([mention(ANA, "!file report.pdf")]);
  await vi.waitFor(() => expect(socket.sent.some((s) => "document" in s.content)).toBe(true), { timeout: 10_000 });
  await daemon.whenIdle();
  expect(texts(socket.sent)).toEqual(["Here is chart.png.", "Here is report.pdf."]);
  const image = socket.sent.find((s) => "image" in s.content)!;
  expect(image.options?.quoted?.key.id).toBe(asked.key.id);
  if (!("image" in image.content)) throw new Error("expected an image");
  expect(image.content.image.subarray(0, 4).toString("hex")).toBe("89504e47");
  const doc = socket.sent.find((s) => "document" in s.content)!;
  expect(doc.content).toMatchObject({ fileName: "report.pdf", mimetype: "application/pdf" });
  expect(socket.sent.filter((s) => "image" in s.content || "document" in s.content)).toHaveLength(2);
});
