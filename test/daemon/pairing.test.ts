/**
 * DM pairing end to end on Telegram (the Bot API fake over real HTTP,
 * grammY's client, the emulator), and on Discord (discord.js against the
 * local REST and gateway fake): a stranger gets a code and nothing they
 * write reaches the agent; the owner approves it with the `agent-bridge
 * pairing` command (a real child process) while the daemon runs, or with
 * `/approve CODE` from their chat; a wrong or expired code does not work;
 * approvals survive a restart, revoke takes them back, and the code is never
 * in the daemon's state or logs.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { expect, it, onTestFinished } from "vitest";
import { createDaemon, type Daemon } from "../../daemon/daemon.js";
import { runPairingCommand } from "../../daemon/pairing-command.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeDiscord, waitFor } from "../fakes/discord.js";
import { createFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.js";
import { startServiceFixture } from "../helpers/bridge.js";
import { runAgentBridge } from "../helpers/cli.js";
import { createSteppableClock } from "../helpers/steppable-clock.js";
import { TELEGRAM_BOT_TOKEN } from "../helpers/tokens.js";

const owner = { id: 5001, username: "owner" };
const stranger = { id: 5066, username: "stranger" };
const other = { id: 5077, username: "other" };
const member = { id: 5010, username: "member" };
const CODE = /pairing code is ([A-Z2-9]{8})/;

async function bridge() {
  const service = await startServiceFixture("pairing-");
  const fake = await createFakeTelegram({ token: TELEGRAM_BOT_TOKEN });
  onTestFinished(() => fake.close());
  const channel = {
    type: "telegram",
    id: "tg",
    token: TELEGRAM_BOT_TOKEN,
    apiRoot: fake.url,
    streaming: "off",
    access: { mode: "pairing", owners: [String(owner.id)], users: [String(member.id)] },
  };
  const config = service.configFor(channel);
  // The same config on disk, for the command line.
  const configFile = join(service.dataDir, "..", `${service.dataDir.split("/").at(-1)}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      service: config.service,
      dataDir: config.dataDir,
      logLevel: "silent",
      ops: { port: null },
      routes: [{ instance: service.instanceId }],
      channels: [channel],
    }),
  );
  onTestFinished(() => writeFileSync(configFile, ""));
  const clock = createSteppableClock();
  const logLines: string[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => void logLines.push(line) });
  let daemon: Daemon | undefined;
  const launch = async () => {
    daemon = createDaemon({ config, clock, random: seededRandom(11), logger });
    onTestFinished(() => daemon?.stop({ graceMs: 0 }));
    await daemon.start();
  };
  const stop = async () => daemon?.stop({ graceMs: 0 });
  const responsesAsked = () => service.emulator.emulator.requests.journal().filter((r) => r.path.includes("/responses")).length;
  return { fake, clock, launch, stop, configFile, dataDir: service.dataDir, logLines, responsesAsked };
}

/** Sends `text` as `user` and resolves with the next message the bot sends them. */
async function ask(fake: FakeTelegram, user: { id: number; username: string }, text: string): Promise<string> {
  const before = fake.sentMessages(user.id).length;
  fake.privateText(user, text);
  await fake.waitFor(() => fake.sentMessages(user.id).length > before);
  return fake.sentMessages(user.id).at(-1)!.text;
}

/** Every file of the daemon's data directory, as text. */
const stateText = (dir: string): string =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name), "latin1"))
    .join("\n");

it("a stranger gets a code, is approved by the command line while the daemon runs, and is answered after", async () => {
  const b = await bridge();
  await b.launch();
  const first = await ask(b.fake, stranger, "hello, who are you? my secret plan is X");
  const code = CODE.exec(first)?.[1];
  expect(code).toBeDefined();
  expect(first).toContain(`agent-bridge pairing approve tg ${code}`);
  // Asking again right away: no answer (a stranger cannot make the bot talk at will); ten minutes on, a reminder, no new code.
  b.fake.privateText(stranger, "still there?");
  await b.fake.waitFor(() => b.fake.pending() === 0); // taken (and refused) before the clock moves
  b.clock.advance(10 * 60_000);
  expect(await ask(b.fake, stranger, "hello?")).toContain("still waiting");
  expect(b.fake.sentMessages(stranger.id)).toHaveLength(2);
  // Nothing reached the agent.
  expect(b.responsesAsked()).toBe(0);

  const approve = runAgentBridge(["pairing", "approve", "tg", code!.toLowerCase(), "--config", b.configFile]);
  expect(await approve.exited).toBe(0);
  expect(approve.stdout()).toContain("Approved stranger");
  await b.fake.waitFor(() => b.fake.sentMessages(stranger.id).some((m) => m.text.includes("The owner approved you")));
  expect(await ask(b.fake, stranger, "now?")).toBe("You said: now?");
  // What they wrote before approval was not kept: the agent's context starts after it.
  expect(await ask(b.fake, stranger, "!recall")).toBe("now?");

  // The code is a secret: not in the state on disk, not in a log line.
  await b.stop();
  expect(stateText(b.dataDir)).not.toContain(code);
  expect(b.logLines.join("")).not.toContain(code);
  expect(b.logLines.join("")).not.toContain("secret plan");
});

it("/approve from an owner's chat works once; a wrong code, a non-owner and an expired code do not", async () => {
  const b = await bridge();
  await b.launch();
  const code = CODE.exec(await ask(b.fake, stranger, "hi"))![1]!;
  const late = CODE.exec(await ask(b.fake, other, "hi"))![1]!;

  expect(await ask(b.fake, owner, "/approve ZZZZZZZZ")).toContain("matches no waiting request");
  // A listed user who is not an owner cannot approve (and a stranger cannot even send commands).
  expect(await ask(b.fake, member, `/approve ${code}`)).toContain("Only this channel's owners");
  expect(await ask(b.fake, owner, `/approve ${code}`)).toContain("Approved stranger");
  expect(await ask(b.fake, owner, `/approve ${code}`)).toContain("matches no waiting request");
  expect(await ask(b.fake, stranger, "in?")).toBe("You said: in?");

  // An hour and a minute later the other code has expired.
  b.clock.advance(61 * 60_000);
  expect(await ask(b.fake, owner, `/approve ${late}`)).toContain("matches no waiting request");
  // They are refused still and get a fresh code.
  const again = await ask(b.fake, other, "hello again");
  expect(CODE.exec(again)?.[1]).not.toBe(late);
  expect(b.logLines.join("")).not.toContain(code);
});

it("approvals survive a restart, list shows no codes, revoke takes them back; the command works with no daemon too", async () => {
  const b = await bridge();
  await b.launch();
  const code = CODE.exec(await ask(b.fake, stranger, "hi"))![1]!;
  CODE.exec(await ask(b.fake, other, "hi"));
  await b.stop();

  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) };
  expect(await runPairingCommand({ configFile: b.configFile, command: { op: "approve", channel: "nope", code }, ...io })).toBe(1);
  expect(err.join("\n")).toContain('No channel "nope"');
  expect(await runPairingCommand({ configFile: b.configFile, command: { op: "approve", channel: "tg", code }, ...io })).toBe(0);
  expect(out.join("\n")).toContain("The daemon is not running");
  expect(await runPairingCommand({ configFile: b.configFile, command: { op: "list" }, ...io })).toBe(0);
  const listed = out.at(-1)!;
  expect(listed).toMatch(/waiting +5077 \(other\)/);
  expect(listed).toMatch(/approved +5066 \(stranger\)/);
  expect(listed).not.toContain(code);

  await b.launch();
  expect(await ask(b.fake, stranger, "after the restart")).toBe("You said: after the restart");
  const revoke = runAgentBridge(["pairing", "revoke", "tg", "5066", "--config", b.configFile]);
  expect(await revoke.exited).toBe(0);
  expect(CODE.exec(await ask(b.fake, stranger, "and now?"))).not.toBeNull();
});

it("on Discord: a stranger's DM gets a code, the owner approves it from their DM, and the stranger is answered", async () => {
  const service = await startServiceFixture("pairing-discord-");
  const token = "MTA0NjY5.pairing-bot.token-value-that-must-stay-secret";
  const fake = await createFakeDiscord({ token, guilds: [] });
  onTestFinished(() => fake.close());
  const boss = { id: "700000000000000001", username: "boss" };
  const newcomer = { id: "700000000000000066", username: "newcomer" };
  const config = service.configFor({ type: "discord", id: "dc", token, api: fake.apiBase, streaming: "off", access: { mode: "pairing", owners: [boss.id] } });
  const daemon = createDaemon({ config, random: seededRandom(13) });
  onTestFinished(() => daemon.stop({ graceMs: 0 }));
  await daemon.start();
  const said = (user: typeof boss) => fake.sentMessages(fake.dmChannelFor(user)).map((m) => m.content);

  fake.dispatchDirectMessage(newcomer, "hello?");
  await waitFor(() => said(newcomer).length === 1, "the code");
  const code = CODE.exec(said(newcomer)[0]!)?.[1];
  expect(code).toBeDefined();
  expect(said(newcomer)[0]).toContain(`agent-bridge pairing approve dc ${code}`);
  fake.dispatchDirectMessage(boss, `/approve ${code}`);
  await waitFor(() => said(boss).length === 1 && said(newcomer).length === 2, "the approval and the notice");
  expect(said(boss)[0]).toContain("Approved newcomer");
  expect(said(newcomer)[1]).toContain("The owner approved you");
  fake.dispatchDirectMessage(newcomer, "now?");
  await waitFor(() => said(newcomer).length === 3, "the answer");
  expect(said(newcomer)[2]).toBe("You said: now?");
});
