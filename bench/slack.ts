/**
 * Slack's line: turns per second through the daemon (a real `agent-bridge run` process, a Slack
 * channel on the local Slack fake, streaming off, no debounce) against the typed client calling
 * the same emulator directly, in the same run, at 200 chats, over the HTTP Events API and over
 * Socket Mode. Closed loops per chat, as the Telegram line (bench/daemon.ts): a chat's next
 * message goes when the answer to the previous one was posted.
 *
 * Each chat is its own DM channel; the fake's per-channel posting limit is lifted (as the
 * Telegram fake has none), so the line measures the bridge, not Slack's one post a second.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "undici";
import { createServiceClient } from "../shared/client/index.js";
import { createFakeSlack } from "../test/fakes/slack.js";
import { BIN, closedLoops, ROOT, startChild, stopChild, type Result } from "./daemon.js";

const BOT_TOKEN = "xoxb-1-2-benchBotToken";
const APP_TOKEN = "xapp-1-A0-3-benchAppToken";
const SIGNING_SECRET = "benchSigningSecret0123456789abcd";
const CHATS = 200;
const MESSAGES = Number(process.env.BENCH_SLACK_MESSAGES ?? 10);

export async function benchSlack(): Promise<void> {
  console.log(`\nSlack: turns/s through the daemon vs the typed client, ${CHATS} chats x ${MESSAGES} messages, closed loop per chat`);
  const emulator = await startChild(["emulator", "--port", "0", "--in-memory", "--provision-ms", "0"], /listening on (http:\/\/\S+)/);
  const baseUrl = emulator.match[1] ?? "";
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
  const anon = createServiceClient({ baseUrl, dispatcher: agent });
  const { api_key } = await anon.signup({ body: { name: "bench-slack" } });
  const api = anon.withKey(api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const instance = await api.createInstance({ body: { name: "bench-slack" } });
  const line = (name: string, r: Result) =>
    `  ${name.padEnd(34)} ${r.turnsPerSecond.toFixed(0).padStart(6)} turns/s   p50 ${r.p50.toFixed(1).padStart(7)} ms   p99 ${r.p99.toFixed(1).padStart(7)} ms`;

  try {
    let n = 0;
    const directTurn = async (chat: number, i: number) => {
      await api.createSessionResponse({ instance_id: instance.id, session_id: `direct-${chat}`, body: { model: "m", input: `hello ${i} ${n++}` } });
    };
    await closedLoops(CHATS, 1, directTurn); // warm-up, untimed
    const direct = await closedLoops(CHATS, MESSAGES, directTurn);
    console.log(line("direct client", direct));
    for (const mode of ["http", "socket"] as const) {
      const through = await relayed(mode);
      console.log(line(`through the daemon, ${mode === "http" ? "Events API" : "Socket Mode"}`, through));
      console.log(
        `  ratio: ${(through.turnsPerSecond / direct.turnsPerSecond).toFixed(2)}x throughput (goal >= 0.8x), p99 ${(through.p99 / direct.p99).toFixed(1)}x (goal <= 3x)`,
      );
    }
  } finally {
    await agent.close();
    await stopChild(emulator.child);
  }

  /** The closed loops through a daemon process with a Slack channel in `mode`. */
  async function relayed(mode: "http" | "socket"): Promise<Result> {
    const fake = await createFakeSlack({ botToken: BOT_TOKEN, appToken: APP_TOKEN, signingSecret: SIGNING_SECRET, mode, postBurst: 1_000_000 });
    const waiters = new Map<string, () => void>();
    fake.onPosted = (message) => {
      const done = waiters.get(message.channel);
      waiters.delete(message.channel);
      done?.();
    };
    const dataDir = await mkdtemp(join(tmpdir(), "bench-slack-"));
    const configFile = join(dataDir, "config.json");
    const users = Array.from({ length: CHATS }, (_, c) => userOf(c));
    await writeFile(
      configFile,
      JSON.stringify({
        service: { baseUrl, apiKey: api_key },
        dataDir,
        logLevel: "info", // the Events API endpoint's address is read from the log
        ops: { port: null },
        queue: { debounceMs: 0, concurrencyPerInstance: CHATS, maxPendingTotal: 10_000 },
        routes: [{ instance: instance.id }],
        channels: [
          {
            type: "slack",
            id: "sl",
            botToken: BOT_TOKEN,
            mode,
            ...(mode === "http" ? { signingSecret: SIGNING_SECRET, http: { port: 0 } } : { appToken: APP_TOKEN }),
            api: fake.apiBase,
            streaming: "off",
            access: { users },
          },
        ],
      }),
    );
    const daemon = spawn(process.execPath, [BIN, "run", "--config", configFile], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    const endpoint = new Promise<string>((resolve) => {
      daemon.stdout?.on("data", (d: Buffer) => {
        // Only the start-up lines are kept: the rest of the log is not read.
        if (out.length < 1_000_000) out += d.toString();
        const found = /"url":"(http:\/\/127\.0\.0\.1:\d+\/slack\/events)"/.exec(out);
        if (found?.[1]) resolve(found[1]);
      });
    });
    if (mode === "http") fake.setRequestUrl(await endpoint);
    const turn = (chat: number, text: string) =>
      new Promise<void>((resolve) => {
        waiters.set(dmOf(chat), resolve);
        fake.say({ user: userOf(chat), channel: dmOf(chat), text });
      });
    try {
      await turn(0, "warm-up");
      await closedLoops(CHATS, 1, (chat) => turn(chat, "warm-up"));
      return await closedLoops(CHATS, MESSAGES, (chat, i) => turn(chat, `hello ${i}`));
    } finally {
      await stopChild(daemon);
      await fake.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }
}

const userOf = (chat: number) => `U${String(chat).padStart(9, "0")}`;
const dmOf = (chat: number) => `D${String(chat).padStart(9, "0")}`;

if (import.meta.url === `file://${process.argv[1]}`) await benchSlack();
