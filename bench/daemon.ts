/**
 * The relay's throughput: turns per second through the daemon (a real `agent-bridge run`
 * process, Telegram channel on the local Bot API fake, streaming off, no debounce) against the
 * typed client calling the same emulator directly, in the same run, at 1 chat and at 200 chats.
 *
 * Both sides are closed loops per chat: a chat sends its next message when the answer to the
 * previous one has arrived, so "200 chats" means 200 turns in flight on both sides, and the
 * daemon may run as many service calls at once (`queue.concurrencyPerInstance` = chats; the
 * default of 4 is a politeness limit toward the service, not a throughput setting).
 *
 * Both sides are warmed up the same way before they are timed: one untimed turn per chat, so
 * connections are open and code is compiled on both (before, only the daemon was warmed, and the
 * direct client's 200 cold connects on a loaded machine could stall a chat for seconds: its p99
 * and so its turns/s, set by the slowest chat, measured connection setup, not turns).
 *
 * At 200 chats the comparison runs in interleaved rounds (BENCH_DAEMON_ROUNDS, default 3): each
 * round times the direct client and the daemon (and, with BENCH_DAEMON_BASELINE, another build's
 * daemon) on the same emulator, the order turning from round to round; the per-round ratios and
 * their median are printed, with the load average beside each.
 *
 * At 200 chats the daemon runs a second time with its state on PostgreSQL (a throwaway local
 * server on the same cores): goal 0.8x of the file journal's throughput. Then the failover time
 * of two nodes on one database (kill -9 of the owner to the first reply from the next), median
 * of five. `BENCH_POSTGRES=0` leaves both out.
 *
 * The emulator and the daemon are child processes (the compiled command, `dist/`), so each has
 * a core of its own as it would in production; this process only sends and counts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "undici";
import { createServiceClient } from "../shared/client/index.js";
import pg from "pg";
import { createFakeTelegram, type SentMessage } from "../test/fakes/telegram-bot-api.js";
import { startTestPostgres, type TestPostgres } from "../test/helpers/postgres.js";

export const ROOT = join(import.meta.dirname, "..");
export const BIN = join(ROOT, "dist", "bin", "agent-bridge.js");
const TOKEN = "123456789:BenchBenchBenchBenchBenchBenchBench";
/** Chats and messages per chat: one chat x 100 messages, then 200 chats x 10. */
const RUNS = [
  { chats: 1, messages: Number(process.env.BENCH_DAEMON_MESSAGES_ONE ?? 100) },
  { chats: 200, messages: Number(process.env.BENCH_DAEMON_MESSAGES ?? 10) },
];

export interface Result {
  turnsPerSecond: number;
  p50: number;
  p99: number;
  /** Turns that took a second or more, and how many of them were a chat's first of the run (sent all at once). */
  slow: { total: number; first: number };
}

/** CPU time (user + system) a child has used so far, in ms; undefined where /proc is not there. */
export async function cpuMs(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 a second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/**
 * CPU time of a test PostgreSQL server, in ms: the postmaster's own and that of its children
 * it reaped (the backends of connections since closed), plus its children still running.
 */
async function postgresCpuMs(server: TestPostgres): Promise<number | undefined> {
  const { execFile } = await import("node:child_process");
  const run = (args: string[]) => new Promise<string>((resolve) => execFile("pgrep", args, (_e, out) => resolve(out)));
  const postmaster = (await run(["-f", "--", `-p ${server.port}`])).trim().split("\n")[0];
  if (!postmaster) return undefined;
  try {
    const fields = (await readFile(`/proc/${postmaster}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
    // utime, stime, cutime, cstime: fields 14-17 of stat, in clock ticks.
    let total = ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / 100;
    for (const pid of (await run(["-P", postmaster])).split("\n").filter(Boolean)) total += (await cpuMs(Number(pid))) ?? 0;
    return total;
  } catch {
    return undefined;
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

/** Runs `chats` closed loops of `perChat` turns each; `turn(chat, i)` resolves when answered. */
export async function closedLoops(chats: number, perChat: number, turn: (chat: number, i: number) => Promise<void>): Promise<Result> {
  const latencies: number[] = [];
  const slow = { total: 0, first: 0 };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: chats }, async (_, chat) => {
      for (let i = 0; i < perChat; i++) {
        const t = performance.now();
        await turn(chat, i);
        const ms = performance.now() - t;
        latencies.push(ms);
        if (ms >= 1000) {
          slow.total++;
          if (i === 0) slow.first++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { turnsPerSecond: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), slow };
}

/**
 * Starts the compiled command and resolves with the child once `ready` matches its stdout.
 * BENCH_EMULATOR_PROFILE=DIR writes an emulator's CPU profile there (`--cpu-prof`);
 * BENCH_EMULATOR_BIN=PATH runs another build's emulator (`dist/bin/agent-bridge.js`), for a before/after.
 */
export function startChild(args: string[], ready: RegExp): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const emulator = args[0] === "emulator";
  const dir = emulator ? process.env.BENCH_EMULATOR_PROFILE : undefined;
  const profile = dir ? ["--cpu-prof", "--cpu-prof-dir", dir] : [];
  const bin = (emulator && process.env.BENCH_EMULATOR_BIN) || BIN;
  const child = spawn(process.execPath, [...profile, bin, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const match = out.match(ready);
      if (match) resolve({ child, match });
    });
    child.once("exit", (code) => reject(new Error(`agent-bridge ${args[0]} exited (${code}) before it was ready\n${out}\n${err}`)));
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

const ONE_PROCESS = process.env.BENCH_ONE_PROCESS === "1";
/** BENCH_DAEMON_BASELINE=PATH: another build's `dist/bin/agent-bridge.js`, run on the same load in each round: a same-run before/after. */
const BASELINE = process.env.BENCH_DAEMON_BASELINE;
/** Rounds at 200 chats: direct, daemon (and baseline) in each, in turning order; the median ratio is the result. */
const ROUNDS = Number(process.env.BENCH_DAEMON_ROUNDS ?? 3);
/** BENCH_DAEMON_FLOOR=1: the floor relay (bench/floor-relay.ts) as one more side of each round: what any relay of this design could reach. */
const FLOOR = process.env.BENCH_DAEMON_FLOOR === "1";
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
/** The machine's load average when a line is printed: the numbers mean little above the number of cores. */
const loadNote = () => `   [load ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores]`;

/** The emulator in a process of its own that also runs the daemon when told (bench/one-process.ts). */
async function startOneProcess(): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "one-process.ts")], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let out = "";
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m);
    });
    child.once("exit", (code) => reject(new Error(`the one-process bench child exited (${code})\n${out}`)));
  });
  return { child, match };
}

/** Starts or stops the daemon inside the one-process child; resolves with the child (whose CPU is both). */
function inOneProcess(child: ChildProcess, message: { start: string } | { stop: true }): Promise<ChildProcess> {
  return new Promise((resolve) => {
    child.once("message", () => resolve(child));
    child.send(message);
  });
}

export async function benchDaemon(): Promise<void> {
  console.log("\nthe relay: turns/s through the daemon vs the typed client, closed loop per chat");
  // BENCH_ONE_PROCESS=1: the emulator and the daemon in one process, as `agent-bridge start` runs them.
  const emulator = ONE_PROCESS
    ? await startOneProcess()
    : await startChild(["emulator", "--port", "0", "--in-memory", "--provision-ms", "0"], /listening on (http:\/\/\S+)/);
  const baseUrl = emulator.match[1]!;
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: Number(process.env.BENCH_DIRECT_CONNECTIONS ?? Math.max(...RUNS.map((r) => r.chats))) });
  // Connections the direct client opens and loses: a new one mid-run waits in a busy emulator's
  // accept queue (docs/architecture.md, "The mid-run stall"), so a run should open none.
  const pool = { connects: 0, idleClosed: 0, otherClosed: 0 };
  agent.on("connect", () => pool.connects++);
  agent.on("disconnect", (_origin, _targets, error) => (/idle timeout/.test(String(error?.message)) ? pool.idleClosed++ : pool.otherClosed++));
  const anon = createServiceClient({ baseUrl, dispatcher: agent });
  const { api_key } = await anon.signup({ body: { name: "bench-daemon" } });
  const api = anon.withKey(api_key);
  await api.updateOrganization({ body: { model_api_keys: { anthropic: "bench" } } });
  const instance = await api.createInstance({ body: { name: "bench-daemon" } });

  const fake = await createFakeTelegram({ token: TOKEN });
  const waiters = new Map<string, () => void>();
  fake.onSent = (m: SentMessage) => {
    const done = waiters.get(m.chat_id);
    if (done) {
      waiters.delete(m.chat_id);
      done();
    }
  };
  const userOf = (chat: number) => ({ id: 700_000 + chat, username: `u${chat}` });

  for (const { chats, messages } of RUNS) {
    let n = 0;
    const directTurn = async (chat: number, i: number) => {
      await api.createSessionResponse({ instance_id: instance.id, session_id: `direct-${chats}-${chat}`, body: { model: "m", input: `hello ${i} ${n++}` } });
    };
    // The warm-up is every chat's first turn on a cold connection: reported, not counted in the run.
    const first = await closedLoops(chats, 1, directTurn);
    // The emulator's own warm-up: one untimed run of the whole load before the first round. Its CPU
    // per turn fell from 1.45 to 0.44 ms over the three rounds of one run (V8 optimizing its request
    // path), so whichever side ran first met a slower service and round 1's ratio flattered it.
    if (chats > 1) await closedLoops(chats, messages, directTurn);
    const line = (name: string, r: Result) =>
      `  ${name.padEnd(30)} ${r.turnsPerSecond.toFixed(0).padStart(6)} turns/s   p50 ${r.p50.toFixed(1).padStart(7)} ms   p99 ${r.p99.toFixed(1).padStart(7)} ms   >= 1 s: ${r.slow.total} (${r.slow.first} first of the run)`;
    const turns = chats * messages;
    const perTurn = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? Number.NaN : (b - a) / turns);
    const own = (used: NodeJS.CpuUsage) => ((used.user + used.system) / 1000 / turns).toFixed(2);

    /** The direct client's closed loops, with the emulator's CPU and the pool's connections over them. */
    const directRun = async (round: number) => {
      // From the second round on, one untimed turn per chat first, as the daemon gets each round: the
      // pool closed its connections while the daemon ran (30 s idle), and the run should open none.
      if (round > 1) await closedLoops(chats, 1, directTurn);
      const emulatorCpuBefore = await cpuMs(emulator.child.pid);
      const ownCpu = process.cpuUsage();
      const poolBefore = { ...pool };
      const result = await closedLoops(chats, messages, directTurn);
      const ownCpuUsed = process.cpuUsage(ownCpu);
      const emulatorCpu = perTurn(emulatorCpuBefore, await cpuMs(emulator.child.pid));
      const poolDuring = `connections opened ${pool.connects - poolBefore.connects}, closed idle ${pool.idleClosed - poolBefore.idleClosed}, closed otherwise ${pool.otherClosed - poolBefore.otherClosed}`;
      return { result, ownCpuUsed, emulatorCpu, poolDuring };
    };

    // Interleaved rounds (BENCH_DAEMON_ROUNDS, default 3 at 200 chats): a neighbour's load moves the
    // lines of a round alike, the order turns each round (the side that runs second meets a warmer
    // emulator), and the ratios are taken per round and their median reported.
    const rounds = chats > 1 ? ROUNDS : 1;
    const ratios: number[] = [];
    const p99Ratios: number[] = [];
    const daemonCpus: number[] = [];
    const baseRatios: number[] = [];
    const baseCpus: number[] = [];
    const floorRatios: number[] = [];
    const floorCpus: number[] = [];
    let lastRelayed: Awaited<ReturnType<typeof relayed>> | undefined;
    for (let round = 1; round <= rounds; round++) {
      const sides: ("direct" | "daemon" | "baseline" | "floor")[] = [
        "direct",
        "daemon",
        ...(BASELINE && !ONE_PROCESS ? (["baseline"] as const) : []),
        ...(FLOOR && !ONE_PROCESS ? (["floor"] as const) : []),
      ];
      const order = [...sides.slice((round - 1) % sides.length), ...sides.slice(0, (round - 1) % sides.length)];
      let direct: Awaited<ReturnType<typeof directRun>> | undefined;
      let through: Awaited<ReturnType<typeof relayed>> | undefined;
      let base: Awaited<ReturnType<typeof relayed>> | undefined;
      let floor: Awaited<ReturnType<typeof relayed>> | undefined;
      for (const side of order) {
        if (side === "direct") direct = await directRun(round);
        else if (side === "daemon") through = await relayed(chats, messages, { kind: "file" });
        else if (side === "floor") floor = await relayed(chats, messages, { kind: "file" }, "floor");
        else base = await relayed(chats, messages, { kind: "file" }, BASELINE);
      }
      if (!direct || !through) throw new Error("a round lost a side");
      lastRelayed = through;
      console.log(
        `${chats} chat${chats === 1 ? "" : "s"} x ${messages} messages${rounds > 1 ? `, round ${round} of ${rounds} (order: ${order.join(", ")})` : ""}${ONE_PROCESS ? " (the emulator and the daemon in one process: its CPU is both)" : ""}:`,
      );
      console.log(line("direct client", direct.result));
      console.log(`  direct client during the run: ${direct.poolDuring} (goal: none opened after the first turn)`);
      if (chats > 1 && round === 1)
        console.log(
          `  first turn of ${chats} chats at once (cold connections): p50 ${first.p50.toFixed(1)} ms, p99 ${first.p99.toFixed(1)} ms = ${(first.p99 / direct.result.p50).toFixed(1)}x the run's p50 (goal <= 10x)`,
        );
      console.log(line("through the daemon", through.result));
      const daemonCpu = perTurn(through.daemonCpu[0], through.daemonCpu[1]);
      daemonCpus.push(daemonCpu);
      if (base) {
        // Another build of the daemon (another checkout's dist/bin/agent-bridge.js) on the same load: a same-run before/after.
        console.log(line("through the baseline daemon", base.result));
        const baseCpu = perTurn(base.daemonCpu[0], base.daemonCpu[1]);
        baseCpus.push(baseCpu);
        baseRatios.push(base.result.turnsPerSecond / direct.result.turnsPerSecond);
        console.log(`  CPU per turn: daemon ${daemonCpu.toFixed(2)} ms, baseline daemon ${baseCpu.toFixed(2)} ms`);
      }
      if (floor) {
        // The least any relay of this design does per turn (bench/floor-relay.ts): the ceiling of the ratio.
        console.log(line("through the floor relay", floor.result));
        const floorCpu = perTurn(floor.daemonCpu[0], floor.daemonCpu[1]);
        floorRatios.push(floor.result.turnsPerSecond / direct.result.turnsPerSecond);
        floorCpus.push(floorCpu);
        console.log(`  floor relay: ${floorRatios.at(-1)!.toFixed(2)}x the direct client, CPU ${floorCpu.toFixed(2)} ms per turn`);
      }
      console.log(
        `  CPU per turn: emulator ${direct.emulatorCpu.toFixed(2)} ms (direct), ${perTurn(through.emulatorCpu[0], through.emulatorCpu[1]).toFixed(2)} ms (relayed); daemon ${daemonCpu.toFixed(2)} ms`,
      );
      // This process: the typed client on the direct side; the Bot API fake and the chats' driver on the relayed side.
      console.log(`  CPU per turn of this process: ${own(direct.ownCpuUsed)} ms (direct client), ${own(through.ownCpu)} ms (Bot API fake and driver)`);
      const ratio = through.result.turnsPerSecond / direct.result.turnsPerSecond;
      const p99Ratio = through.result.p99 / direct.result.p99;
      ratios.push(ratio);
      p99Ratios.push(p99Ratio);
      console.log(`  ratio: ${ratio.toFixed(2)}x throughput (goal >= 0.8x at 200 chats), p99 ${p99Ratio.toFixed(1)}x (goal <= 3x)${loadNote()}`);
    }
    if (rounds > 1) {
      console.log(
        `${chats} chats, median of ${rounds} rounds: ${median(ratios).toFixed(2)}x throughput (per round ${ratios.map((r) => r.toFixed(2)).join(", ")}; goal >= 0.8x), p99 ${median(p99Ratios).toFixed(1)}x (goal <= 3x), daemon CPU ${median(daemonCpus).toFixed(2)} ms per turn`,
      );
      if (floorRatios.length)
        console.log(
          `  floor relay, median: ${median(floorRatios).toFixed(2)}x throughput (per round ${floorRatios.map((r) => r.toFixed(2)).join(", ")}), CPU ${median(floorCpus).toFixed(2)} ms per turn`,
        );
      if (baseRatios.length)
        console.log(
          `  baseline daemon, median: ${median(baseRatios).toFixed(2)}x throughput (per round ${baseRatios.map((r) => r.toFixed(2)).join(", ")}), CPU ${median(baseCpus).toFixed(2)} ms per turn`,
        );
    }
    const through = lastRelayed!;
    if (chats > 1 && process.env.BENCH_POSTGRES !== "0" && !ONE_PROCESS) {
      // The same load with the state on PostgreSQL (a throwaway local server, fsync on): one node of a bridge.
      const pgServer = await startTestPostgres();
      try {
        const url = await pgServer.createDatabase("bench");
        const pgCpuBefore = await postgresCpuMs(pgServer);
        const onPg = await relayed(chats, messages, { kind: "postgres", url, nodeId: "bench-1" });
        const pgCpuAfter = await postgresCpuMs(pgServer);
        console.log(line("through the daemon, PostgreSQL", onPg.result));
        console.log(
          `  CPU per turn: daemon ${perTurn(onPg.daemonCpu[0], onPg.daemonCpu[1]).toFixed(2)} ms, the PostgreSQL server ${perTurn(pgCpuBefore, pgCpuAfter).toFixed(2)} ms (warm-up and start-up included)`,
        );
        console.log(
          `  ratio: PostgreSQL ${(onPg.result.turnsPerSecond / through.result.turnsPerSecond).toFixed(2)}x the file journal's throughput (goal >= 0.8x), p99 ${(onPg.result.p99 / through.result.p99).toFixed(1)}x`,
        );
      } finally {
        await pgServer.close();
      }
    }
  }

  if (process.env.BENCH_POSTGRES !== "0" && !ONE_PROCESS) await failover();

  await fake.close();
  await agent.close();
  await stopChild(emulator.child);

  /** The closed loops through a daemon process with this state backend (or, with `bin` "floor", through bench/floor-relay.ts). */
  async function relayed(chats: number, messages: number, state: Record<string, unknown>, bin = BIN) {
    const dataDir = await mkdtemp(join(tmpdir(), "bench-daemon-"));
    const configFile = join(dataDir, "config.json");
    await writeFile(configFile, JSON.stringify(daemonConfig(dataDir, chats, state)));
    // The daemon prints nothing with silent logs: the warm-up turn is its readiness check.
    // BENCH_DAEMON_PROFILE=DIR writes the daemon's CPU profile there (`--cpu-prof`), to see where its time goes.
    const profile = process.env.BENCH_DAEMON_PROFILE ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_DAEMON_PROFILE] : [];
    const floorArgs = [join(import.meta.dirname, "floor-relay.ts"), fake.url, TOKEN, baseUrl, api_key, instance.id, join(dataDir, "journal")];
    const daemon = ONE_PROCESS
      ? await inOneProcess(emulator.child, { start: configFile })
      : bin === "floor"
        ? spawn(process.execPath, [...profile, "--import", "tsx", ...floorArgs], { cwd: ROOT, stdio: "ignore" })
        : spawn(process.execPath, [...profile, bin, "run", "--config", configFile], { cwd: ROOT, stdio: "ignore" });
    // Warm-up: one turn in one chat (grammY's getMe, the first poll, the first service call).
    await relayTurn(0, "warm-up");
    await closedLoops(chats, 1, (chat) => relayTurn(chat, "warm-up")); // as the direct side: one untimed turn per chat
    const [daemonCpuBefore, emulatorCpuBefore] = [await cpuMs(daemon.pid), await cpuMs(emulator.child.pid)];
    const ownCpuRelay = process.cpuUsage();
    const callsBefore = fake.platformCalls().length;
    const result = await closedLoops(chats, messages, (chat, i) => relayTurn(chat, `hello ${i}`));
    const during = fake.platformCalls().slice(callsBefore);
    const seenBefore = new Set(
      fake
        .platformCalls()
        .slice(0, callsBefore)
        .map((c) => c.connection),
    );
    const byMethod = new Map<string, number>();
    for (const c of during) byMethod.set(c.call, (byMethod.get(c.call) ?? 0) + 1);
    console.log(
      `  daemon to the Bot API fake during the run: ${[...byMethod].map(([m, n]) => `${m} ${n}`).join(", ")}; connections used ${new Set(during.map((c) => c.connection)).size}, new ${new Set(during.map((c) => c.connection).filter((c) => !seenBefore.has(c))).size}`,
    );
    const ownCpu = process.cpuUsage(ownCpuRelay);
    const [daemonCpuAfter, emulatorCpuAfter] = [await cpuMs(daemon.pid), await cpuMs(emulator.child.pid)];
    if (ONE_PROCESS) await inOneProcess(emulator.child, { stop: true });
    else await stopChild(daemon);
    await rm(dataDir, { recursive: true, force: true });
    return { result, ownCpu, daemonCpu: [daemonCpuBefore, daemonCpuAfter], emulatorCpu: [emulatorCpuBefore, emulatorCpuAfter] } as const;
  }

  function daemonConfig(dataDir: string, chats: number, state: Record<string, unknown>) {
    return {
      service: { baseUrl, apiKey: api_key },
      dataDir,
      logLevel: "silent",
      ops: { port: null },
      state,
      queue: { debounceMs: 0, concurrencyPerInstance: chats, maxPendingTotal: 10_000 },
      routes: [{ instance: instance.id }],
      channels: [
        {
          type: "telegram",
          id: "tg",
          token: TOKEN,
          apiRoot: fake.url,
          streaming: "off",
          access: { users: Array.from({ length: Math.max(chats, 1) }, (_, c) => String(userOf(c).id)) },
        },
      ],
    };
  }

  /**
   * Failover: two daemons on one database with the default lease (15 s; BENCH_LEASE_TTL_MS
   * changes it); the owner is killed with SIGKILL and a message sent at once; the time to its
   * reply from the new owner, five times (the killed node is started again each time).
   */
  async function failover(): Promise<void> {
    const ttl = Number(process.env.BENCH_LEASE_TTL_MS ?? 15_000);
    const pgServer = await startTestPostgres();
    const url = await pgServer.createDatabase("failover");
    const db = new pg.Pool({ connectionString: url, max: 1 });
    const dir = await mkdtemp(join(tmpdir(), "bench-failover-"));
    const nodes = new Map<string, ChildProcess>();
    const start = async (name: string) => {
      const configFile = join(dir, `${name}.json`);
      await writeFile(configFile, JSON.stringify(daemonConfig(join(dir, name), 1, { kind: "postgres", url, nodeId: name, leaseTtlMs: ttl })));
      nodes.set(name, spawn(process.execPath, [BIN, "run", "--config", configFile], { cwd: ROOT, stdio: "ignore" }));
    };
    const owner = async (): Promise<string> => {
      for (;;) {
        const { rows } = await db.query("SELECT holder FROM lease WHERE unit = 'telegram:tg' AND expires_at > clock_timestamp()");
        const holder = (rows[0] as { holder: string | null } | undefined)?.holder;
        if (holder && nodes.has(holder)) return holder;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await start("n1");
      await start("n2");
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        await relayTurn(0, `before ${i}`); // the owner is up and answering
        const name = await owner();
        const child = nodes.get(name)!;
        const exited = new Promise((r) => child.once("exit", r));
        const t0 = performance.now();
        child.kill("SIGKILL");
        await exited;
        await relayTurn(0, `after ${i}`);
        times.push(performance.now() - t0);
        await start(name);
      }
      times.sort((a, b) => a - b);
      console.log(
        `\nfailover (two nodes on PostgreSQL, lease ${ttl} ms): kill -9 of the owner to the first reply from the new owner, median of 5: ${(times[2]! / 1000).toFixed(1)} s (all: ${times.map((t) => (t / 1000).toFixed(1)).join(", ")} s; goal: within the lease + 5 s)`,
      );
    } finally {
      for (const child of nodes.values()) child.kill("SIGKILL");
      await db.end();
      await pgServer.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  function relayTurn(chat: number, text: string): Promise<void> {
    const user = userOf(chat);
    return new Promise<void>((resolve) => {
      waiters.set(String(user.id), resolve);
      fake.privateText(user, text);
    });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchDaemon();
