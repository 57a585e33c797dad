/**
 * One person across apps: alice talks to the same agent on Telegram and on
 * Discord (both fakes, one daemon). `/link` on Telegram gives a code, `/link
 * CODE` on Discord uses it; from then on her direct chats share one
 * conversation (`!recall` on one app shows what she said on the other), group
 * chats stay apart, codes work once, and `/unlink` separates them again.
 */
import { expect, it, onTestFinished } from "vitest";
import type { DaemonConfig } from "../../daemon/config/schema.js";
import { createDaemon } from "../../daemon/daemon.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, type FakeUser } from "../fakes/discord.js";
import { createFakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { waitUntil } from "../helpers/wait.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const DC_TOKEN = "MTA0NjY5.links-bot.token-value-that-must-stay-secret";
const tgAlice = { id: 5001, username: "alice" };
const dcAlice: FakeUser = { id: "700000000000000001", username: "alice" };
const tgBob = { id: 5002, username: "bob" };

async function bridge(over: Partial<DaemonConfig> = {}) {
  const service = await startServiceFixture("links-");
  const telegram = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => telegram.close());
  const discord = await createFakeDiscord({ token: DC_TOKEN, guilds: [] });
  onTestFinished(() => discord.close());
  const tg = service.configFor({
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: telegram.url,
    streaming: "off",
    setCommands: false,
    access: { users: [String(tgAlice.id), String(tgBob.id)], groups: { "-1001": {} } },
  });
  const dc = service.configFor({ type: "discord", id: "dc", token: DC_TOKEN, api: discord.apiBase, streaming: "off", access: { users: [dcAlice.id] } });
  const config: DaemonConfig = { ...tg, channels: [...tg.channels, ...dc.channels], ...over };
  const daemon = createDaemon({ config, random: seededRandom(21) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const dm = discord.dmChannelFor(dcAlice);
  const onTelegram = (n: number) => waitUntil(() => telegram.sentMessages(tgAlice.id)[n - 1]?.text, `telegram answer ${n}`);
  const onDiscord = (n: number) => waitUntil(() => discord.sentMessages(dm).map((m) => m.content)[n - 1], `discord answer ${n}`);
  return { telegram, discord, onTelegram, onDiscord };
}

it("links Telegram and Discord with a one-time code: one conversation, !recall shows both; /unlink separates them", { timeout: 60_000 }, async () => {
  const { telegram, discord, onTelegram, onDiscord } = await bridge();
  telegram.privateText(tgAlice, "my name is Alice");
  await onTelegram(1);
  telegram.privateText(tgAlice, "/link");
  const offer = await onTelegram(2);
  const code = /link code is ([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(offer)?.[1];
  expect(code).toBeDefined();

  discord.dispatchDirectMessage(dcAlice, `/link ${code}`);
  expect(await onDiscord(1)).toMatch(/^Linked with your account on telegram \(tg\)/);
  // Single use: the same code again matches nothing.
  discord.dispatchDirectMessage(dcAlice, `/link ${code}`);
  expect(await onDiscord(2)).toMatch(/^That code matches nothing/);

  telegram.privateText(tgAlice, "the meeting is at noon");
  await onTelegram(3);
  discord.dispatchDirectMessage(dcAlice, "and bring the slides");
  await onDiscord(3);
  discord.dispatchDirectMessage(dcAlice, "!recall");
  expect(await onDiscord(4)).toBe("the meeting is at noon\nand bring the slides");
  telegram.privateText(tgAlice, "!recall");
  expect(await onTelegram(4)).toBe("the meeting is at noon\nand bring the slides\n!recall");

  // Someone else's chat is not part of it.
  telegram.privateText(tgBob, "!recall");
  expect(await waitUntil(() => telegram.sentMessages(tgBob.id)[0]?.text, "bob's answer")).toBe("(nothing yet)");

  telegram.privateText(tgAlice, "/unlink");
  expect(await onTelegram(5)).toMatch(/^Unlinked from discord \(dc\): each app goes back to its own conversation from before the link/);
  telegram.privateText(tgAlice, "!recall");
  expect(await onTelegram(6)).toBe("my name is Alice");
  discord.dispatchDirectMessage(dcAlice, "!count");
  expect(await onDiscord(5)).toBe("0");
  // The code never reached the journal in clear.
  expect(JSON.stringify(telegram.sentMessages(tgAlice.id).slice(2))).not.toContain(code!);
});

it("links people the owner names in the config, and refuses /link in a group", { timeout: 60_000 }, async () => {
  const { telegram, discord, onTelegram, onDiscord } = await bridge({
    identityLinks: [
      [
        { channel: "tg", userId: String(tgAlice.id) },
        { channel: "dc", userId: dcAlice.id },
      ],
    ],
  });
  telegram.privateText(tgAlice, "from telegram");
  await onTelegram(1);
  discord.dispatchDirectMessage(dcAlice, "!recall");
  expect(await onDiscord(1)).toBe("from telegram");
  discord.dispatchDirectMessage(dcAlice, "/unlink");
  expect(await onDiscord(2)).toMatch(/linked by the bridge's owner/);
  telegram.groupText(-1001, tgAlice, "/link", { mention: true });
  expect(await waitUntil(() => telegram.sentMessages(-1001)[0]?.text, "the group's answer")).toMatch(/direct chat with the agent only/);
});
