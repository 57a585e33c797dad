/**
 * Files back to the chat (issue #20): the fake model's `!file NAME` writes a
 * file into the instance's workspace and names it (`MEDIA: workspace/NAME`);
 * the daemon downloads it through the typed client and sends it as a photo
 * or document, with the rest of the reply as text, on each platform's fake
 * over real HTTP. Too big, or a key without `files`: a line says so instead.
 */
import { PassThrough } from "node:stream";
import { expect, it, onTestFinished } from "vitest";
import { createDaemon } from "../../daemon/daemon.js";
import { createServiceClient } from "../../shared/client/index.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, waitFor, type FakeUser } from "../fakes/discord.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const alice = { id: 5001, username: "alice" };
const GROUP = -1001234;
const PNG_MAGIC = "89504e47";

async function telegram(channel: Record<string, unknown> = {}, tune?: (service: ServiceFixture) => Promise<Record<string, unknown>>) {
  const service = await startServiceFixture("files-back-tg-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const base = service.configFor({
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    access: { users: [String(alice.id)], groups: { [String(GROUP)]: {} } },
    ...channel,
  });
  const config = tune ? { ...base, service: { ...base.service, ...(await tune(service)) } } : base;
  const daemon = createDaemon({ config, clock: createSteppableClock(), random: seededRandom(11) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  return { fake, daemon, service };
}

const texts = (fake: FakeTelegram, chat: number) => fake.sentMessages(chat).map((m) => m.text);

it("Telegram: a picture the agent made arrives as a photo, a report as a document, each with the reply's text and once", async () => {
  const { fake, daemon } = await telegram({ streaming: "off" });
  fake.privateText(alice, "!file chart.png");
  await fake.waitFor(() => fake.sentFiles(alice.id).length === 1);
  fake.privateText(alice, "!file report.pdf");
  await fake.waitFor(() => fake.sentFiles(alice.id).length === 2);
  await daemon.whenIdle();
  expect(texts(fake, alice.id)).toEqual(["Here is chart.png.", "Here is report.pdf."]);
  const [photo, doc] = fake.sentFiles(alice.id);
  expect(photo).toMatchObject({ method: "sendPhoto", file_name: "chart.png" });
  expect(photo!.data.subarray(0, 4).toString("hex")).toBe(PNG_MAGIC);
  expect(doc).toMatchObject({ method: "sendDocument", file_name: "report.pdf" });
  expect(doc!.data.subarray(0, 5).toString()).toBe("%PDF-");
});

it("Telegram, streamed reply in a group: the text is edited in place, then the file follows, answering the question", async () => {
  const { fake, daemon } = await telegram();
  fake.groupText(GROUP, alice, "!file chart.png", { mention: true });
  await fake.waitFor(() => fake.sentFiles(GROUP).length === 1);
  await daemon.whenIdle();
  const shown = fake.shownMessages(GROUP).map((m) => m.text);
  expect(shown).toEqual(["Here is chart.png."]);
  const asked = fake.sentMessages(GROUP)[0]!.reply_to;
  expect(fake.sentFiles(GROUP)[0]).toMatchObject({ method: "sendPhoto", reply_to: asked });
});

it("Telegram: a key without `files` gets a line instead of the file", async () => {
  const { fake, daemon } = await telegram({ streaming: "off" }, async (service) => {
    const org = createServiceClient({ baseUrl: service.baseUrl, apiKey: service.configFor({ type: "terminal", userId: "x" }).service.apiKey });
    const key = await org.createKey({ body: { name: "no-files", instance_ids: [service.instanceId], permissions: ["interact"] } });
    return { apiKey: key.raw_key };
  });
  fake.privateText(alice, "!file chart.png");
  await fake.waitFor(() => texts(fake, alice.id).length === 2);
  await daemon.whenIdle();
  expect(texts(fake, alice.id)[0]).toBe("Here is chart.png.");
  expect(texts(fake, alice.id)[1]).toMatch(/workspace\/chart\.png.*may not read files.*`files` permission/);
  expect(fake.sentFiles()).toEqual([]);
});

it("Telegram: an audio file goes as a voice note; a path that is not in the workspace gets a line", async () => {
  const { fake, daemon, service } = await telegram({ streaming: "off" });
  const org = createServiceClient({ baseUrl: service.baseUrl, apiKey: service.configFor({ type: "terminal", userId: "x" }).service.apiKey });
  await org.uploadFile({ instance_id: service.instanceId, path: "workspace/hello.ogg", data: Buffer.from("OggS fake opus"), fileName: "hello.ogg" });
  fake.privateText(alice, "listen: [hello](workspace/hello.ogg) and [gone](workspace/missing.pdf)");
  await fake.waitFor(() => texts(fake, alice.id).length === 2 && fake.sentFiles(alice.id).length === 1);
  await daemon.whenIdle();
  expect(texts(fake, alice.id)).toEqual([
    "You said: listen: hello and gone",
    "(The agent named workspace/missing.pdf, but there is no such file in its workspace.)",
  ]);
  expect(fake.sentFiles(alice.id)[0]).toMatchObject({ method: "sendVoice", file_name: "hello.ogg" });
});

const TOKEN_DC = "MTA0NjY5.files-bot.token-value-that-must-stay-secret";
const GUILD = "800000000000000001";
const GENERAL = "800000000000000002";
const bob: FakeUser = { id: "700000000000000002", username: "bob" };

it("Discord: the file arrives as an attachment (multipart files[0]) after the text, answering the question", async () => {
  const service = await startServiceFixture("files-back-dc-");
  const fake = await createFakeDiscord({ token: TOKEN_DC, guilds: [{ id: GUILD, name: "Guild", channels: [{ id: GENERAL, name: "general" }] }] });
  onTestFinished(() => fake.close());
  const config = service.configFor({ type: "discord", id: "dc", token: TOKEN_DC, api: fake.apiBase, access: { users: [bob.id], groups: { [GENERAL]: {} } } });
  const daemon = createDaemon({ config, random: seededRandom(12) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const asked = fake.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: bob, content: `<@${fake.bot.id}> !file report.pdf`, mentions: [fake.bot] });
  await waitFor(() => fake.sentMessages(GENERAL).some((m) => m.files?.length), "the file");
  await daemon.whenIdle();
  const sent = fake.sentMessages(GENERAL);
  // The streamed text ends without the MEDIA line; the file follows as a message of its own.
  expect(sent).toHaveLength(2);
  expect(fake.messageVersions(sent[0]!.id)?.at(-1)?.content).toBe("Here is report.pdf.");
  expect(sent[1]!.content).toBe("");
  expect(sent[1]).toMatchObject({ replyTo: asked.id });
  expect(sent[1]!.files).toHaveLength(1);
  expect(sent[1]!.files![0]).toMatchObject({ name: "report.pdf" });
  expect(sent[1]!.files![0]!.data.subarray(0, 5).toString()).toBe("%PDF-");
});

it("terminal: prints the file's workspace path after the reply", async () => {
  const service = await startServiceFixture("files-back-term-");
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = "";
  output.on("data", (chunk: Buffer) => {
    shown += chunk.toString();
  });
  const config = service.configFor({ type: "terminal", userId: "me", access: { mode: "open" } });
  const daemon = createDaemon({ config, random: seededRandom(13), stdin: input, stdout: output });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  input.write("!file notes.txt\n");
  await waitFor(() => shown.includes("📎"), "the file line");
  await daemon.whenIdle();
  expect(shown).toContain("Here is notes.txt.");
  // Streamed as it came (a terminal cannot take back the MEDIA line it printed), then the file's line.
  expect(shown).toMatch(/📎 workspace\/notes\.txt \(document, \d+ bytes\)/);
});

it("Discord: a file over Discord's 10 MiB is not downloaded whole nor sent; a line says so and the file stays in the workspace", async () => {
  const service = await startServiceFixture("files-back-big-");
  const org = createServiceClient({ baseUrl: service.baseUrl, apiKey: service.configFor({ type: "terminal", userId: "x" }).service.apiKey });
  await org.uploadFile({ instance_id: service.instanceId, path: "workspace/big.bin", data: Buffer.alloc(12 * 1024 * 1024, 1), fileName: "big.bin" });
  const fake = await createFakeDiscord({ token: TOKEN_DC, guilds: [{ id: GUILD, name: "Guild", channels: [{ id: GENERAL, name: "general" }] }] });
  onTestFinished(() => fake.close());
  const config = service.configFor({ type: "discord", id: "dc", token: TOKEN_DC, api: fake.apiBase, streaming: "off", access: { users: [bob.id] } });
  const daemon = createDaemon({ config, random: seededRandom(14) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const dm = fake.dmChannelFor(bob);
  fake.dispatchDirectMessage(bob, "here: [the data](workspace/big.bin)");
  await waitFor(() => fake.sentMessages(dm).length === 2, "the reply and the line");
  await daemon.whenIdle();
  expect(fake.sentMessages(dm).map((m) => m.content)).toEqual([
    "You said: here: the data",
    "(The file workspace/big.bin is 12 MB, over this chat's limit of 10 MB: it stays in the agent's workspace.)",
  ]);
  expect(fake.sentMessages(dm).some((m) => m.files?.length)).toBe(false);
});
