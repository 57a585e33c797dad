/**
 * The container image, without a container engine (none runs on these machines): what the
 * Dockerfile and the compose files promise, and the image's production install run the way
 * the image runs it.
 *
 * The install: the Dockerfile's build-stage script (scripts/pack-production.mjs: `npm pack`
 * and a package.json naming the tarball and the platform libraries; its output copied in as the
 * final stage's COPY does, one run shared with pack-install.test.ts: test/helpers/packed.ts) and
 * its final stage's `npm install` line, read from the Dockerfile and run as written in a clean
 * folder (~19 s of this file's ~31 s of CPU: 429 packages, the image's own). Then each
 * command the image runs (its CMD, `run` as compose.cluster.yaml runs it, `start`), with the
 * image's environment (ENV), working directory and user (uid 1000, `node` in the image, when
 * this test runs as root), answers the image's HEALTHCHECK command and stops with exit code 0
 * on SIGTERM. The image's paths live under a temporary folder (/app, /data and /config inside
 * it), and ports the commands would take (8080, 9464) are free ones here: on a shared machine a
 * fixed port may be taken; the health check is told the ports through its own variables.
 * tini (the ENTRYPOINT's first word) is not run: it only passes the signals on.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { load as loadYaml } from "js-yaml";
import { parse as parseJsonc } from "jsonc-parser";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { parseConfig } from "../../daemon/config/load.js";
import { createFakeTelegram } from "../fakes/telegram-bot-api.js";
import { startService } from "../daemon/daemon-harness.js";
import { startTestPostgres } from "../helpers/postgres.js";
import { packedProduction } from "../helpers/packed.js";
import { waitUntil } from "../helpers/wait.js";
import { lacks } from "../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const ROOT = join(import.meta.dirname, "..", "..");
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

// --- the Dockerfile, as instructions per stage

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  steps: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const logical = text
    .replace(/\\\n/g, " ") // continuation lines
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  for (const line of logical) {
    const [, op = "", args = ""] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const step = { op: op.toUpperCase(), args: args.replace(/\s+/g, " ").trim() };
    if (step.op === "FROM") {
      const [, from = "", name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(step.args) ?? [];
      stages.push({ from, name, steps: [] });
    } else if (stages.length) stages.at(-1)!.steps.push(step);
  }
  return stages;
}

const stages = parseDockerfile(read("Dockerfile"));
const final = stages.at(-1)!;
const finalSteps = (op: string) => final.steps.filter((s) => s.op === op);
const lastOf = (op: string) => finalSteps(op).at(-1)?.args ?? "";
const execForm = (args: string): string[] => JSON.parse(args.replace(/^CMD\s+/, "")) as string[];
const entrypoint = execForm(lastOf("ENTRYPOINT"));
const cmd = execForm(lastOf("CMD"));
const healthcheck = execForm(/CMD\s+(\[.*\])$/.exec(lastOf("HEALTHCHECK"))![1]!);
/** The final stage's ENV, as `K=V` pairs (values without quotes or spaces here). */
const imageEnv = Object.fromEntries(finalSteps("ENV").flatMap((s) => s.args.split(" ").map((kv) => kv.split("=", 2) as [string, string])));

// --- the image's paths, under a temporary folder

let root: string;
const onHost = (path: string) => path.replace(/^\/(app|data|config)(?=\/|$)/, (_m, top: string) => join(root, top));
const asRoot = process.getuid?.() === 0;
const IMAGE_UID = 1000; // `node` in the official Node.js images

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });

/** The image's environment on this machine: its ENV with its paths mapped, plus `extra`. */
function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { HOME: join(root, "home"), NO_COLOR: "1" };
  for (const [k, v] of Object.entries(imageEnv)) env[k] = v.replace("$PATH", process.env.PATH ?? "").replace(/\/app\//g, `${join(root, "app")}/`);
  return { ...env, ...extra };
}

interface Running {
  child: ChildProcess;
  out(): string;
  exited: Promise<number | null>;
}

/** `ENTRYPOINT + args` as the image runs it (without tini): the image's user, environment and working directory. */
function runAsImage(args: string[], env: NodeJS.ProcessEnv): Running {
  const [command, ...rest] = entrypoint.slice(entrypoint.indexOf("--") + 1).concat(args);
  const child = spawn(command!, rest.map(onHost), {
    cwd: onHost(lastOf("WORKDIR")),
    env,
    stdio: ["pipe", "pipe", "pipe"],
    ...(asRoot ? { uid: IMAGE_UID, gid: IMAGE_UID } : {}),
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, out: () => out, exited };
}

/** The image's HEALTHCHECK command, as the image's user: its exit code and what it printed (asynchronous: the fakes in this process keep answering). */
function healthCheck(env: NodeJS.ProcessEnv): Promise<{ status: number; output: string }> {
  const [command, ...args] = healthcheck;
  return new Promise((resolve) => {
    execFile(command!, args.map(onHost), { env, encoding: "utf8", ...(asRoot ? { uid: IMAGE_UID, gid: IMAGE_UID } : {}) }, (error, stdout, stderr) =>
      resolve({ status: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/** SIGTERM, as `docker stop` sends it; resolves with the exit code. */
async function stop(running: Running): Promise<number | null> {
  running.child.kill("SIGTERM");
  return running.exited;
}

describe("the Dockerfile", () => {
  it("builds in one stage and installs the packed package for production in another", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((s) => s.name === "build")!;
    expect(build.steps.map((s) => s.args).join("\n")).toMatch(/npm run build && node scripts\/pack-production\.mjs \/out/);
    expect(final.name).toBeUndefined();
    expect(finalSteps("COPY").map((s) => s.args)).toContain("--from=build /out/ ./");
    const install = finalSteps("RUN").find((s) => s.args.includes("npm install"))!.args;
    expect(install).toContain("--omit=dev");
    // Nothing in the final stage builds or runs npm ci with the dev dependencies.
    expect(finalSteps("RUN").some((s) => /npm (ci|run build)/.test(s.args))).toBe(false);
  });

  it("runs as the unprivileged node user, keeps data on a volume, checks its health and passes signals on", () => {
    expect(lastOf("USER")).toBe("node");
    expect(finalSteps("RUN").some((s) => s.args.includes("chown node:node /data"))).toBe(true);
    expect(lastOf("VOLUME")).toBe("/data");
    expect(lastOf("WORKDIR")).toBe("/data");
    expect(lastOf("HEALTHCHECK")).toMatch(/^--interval=\S+ --timeout=\S+ --start-period=\S+ --retries=\d+ CMD \[/);
    expect(healthcheck).toEqual(["node", "/app/healthcheck.mjs"]);
    expect(finalSteps("COPY").map((s) => s.args)).toContain("docker/healthcheck.mjs ./healthcheck.mjs");
    // Exec form with an init as PID 1: signals reach agent-bridge, not a shell.
    expect(entrypoint).toEqual(["/usr/bin/tini", "--", "agent-bridge"]);
    expect(finalSteps("RUN").some((s) => /apt-get install .*\btini\b/.test(s.args))).toBe(true);
    expect(cmd).toEqual(["emulator", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/data/emulator"]);
    expect(imageEnv).toEqual({ NODE_ENV: "production", PATH: "/app/node_modules/.bin:$PATH" });
    expect(lastOf("EXPOSE")).toBe("8080 9464");
  });

  it("leaves local build output and dependencies out of the build context", () => {
    const ignored = read(".dockerignore").split("\n");
    for (const entry of ["node_modules", "dist", ".data", ".git"]) expect(ignored).toContain(entry);
  });
});

// --- the compose files

type Service = {
  build?: string;
  image?: string;
  command?: string[];
  environment?: Record<string, string> | string[];
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
};
type Compose = { services: Record<string, Service>; volumes: Record<string, unknown> };
/** YAML merge keys (`<<: *anchor`), which Compose applies and js-yaml 5 leaves as a `<<` key. */
function mergeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(mergeKeys);
  if (!value || typeof value !== "object") return value;
  const { "<<": base, ...rest } = value as Record<string, unknown>;
  const merged = { ...(base as Record<string, unknown> | undefined), ...rest };
  return Object.fromEntries(Object.entries(merged).map(([k, v]) => [k, mergeKeys(v)]));
}
const compose = (file: string) => mergeKeys(loadYaml(read(file))) as Compose;
const namedVolumes = (c: Compose) => Object.values(c.services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(":")[0]!).filter((v) => !v.startsWith(".")));

describe("the compose files", () => {
  it("compose.yaml: the emulator alone, from this image, on 8080, its state on a volume, with the image's health check", () => {
    const c = compose("compose.yaml");
    expect(Object.keys(c.services)).toEqual(["emulator"]);
    const emulator = c.services.emulator!;
    expect(emulator.build).toBe(".");
    expect(emulator.command).toBeUndefined(); // the image's CMD
    expect(emulator.ports).toEqual(["8080:8080"]);
    expect(emulator.volumes).toEqual(["emulator-data:/data"]);
    expect(Object.keys(c.volumes)).toEqual(namedVolumes(c));
    expect(emulator.healthcheck?.test).toEqual(["CMD", ...healthcheck]);
    // The admin token passes from the shell only when set (an empty token would be refused).
    expect(emulator.environment).toEqual(["EMULATOR_ADMIN_TOKEN"]);
  });

  it("compose.cluster.yaml: PostgreSQL and two nodes running one config, each with its own volume, port and name", () => {
    const c = compose("compose.cluster.yaml");
    expect(Object.keys(c.services).sort()).toEqual(["node-a", "node-b", "postgres"]);
    const postgres = c.services.postgres!;
    expect(postgres.image).toBe("postgres:15");
    expect(postgres.volumes).toEqual(["pg-data:/var/lib/postgresql/data"]);
    expect(postgres.healthcheck?.test.join(" ")).toContain("pg_isready");
    expect(Object.keys(c.volumes).sort()).toEqual([...new Set(namedVolumes(c))].sort());

    const config = parseJsonc(read("docker/daemon.json")) as { ops: { port: number; host: string }; dataDir: string };
    const hostPorts: string[] = [];
    for (const name of ["node-a", "node-b"]) {
      const node = c.services[name]!;
      expect(node.build).toBe(".");
      expect(node.command).toEqual(["run", "--config", "/config/daemon.json"]);
      expect(node.volumes).toEqual([`${name}-data:/data`, "./docker/daemon.json:/config/daemon.json:ro"]);
      expect(node.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
      expect(node.healthcheck?.test).toEqual(["CMD", ...healthcheck]);
      expect(Number.parseInt(node.stop_grace_period ?? "0", 10)).toBeGreaterThan(10); // more than the daemon's 10 s stop
      const [hostPort, containerPort] = node.ports![0]!.split(":");
      expect(Number(containerPort)).toBe(config.ops.port);
      hostPorts.push(hostPort!);
      const env = node.environment as Record<string, string>;
      expect(env.NODE_ID).toBe(name);
      expect(env.PG_URL).toMatch(/^postgres:\/\/bridge:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432\/bridge$/);
      // Every ${VAR} the config reads is set for the node; the config is valid with them.
      const wanted = [...read("docker/daemon.json").matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]!);
      for (const v of wanted) expect(Object.keys(env), v).toContain(v);
      const placeholders = {
        ...env,
        SERVICE_URL: "http://emulator:8080",
        AGENT_API_KEY: "svc_sk_placeholder",
        TELEGRAM_OWNER_ID: "5101",
        OPS_TOKEN: "placeholder-ops-token",
        INSTANCE_ID: "placeholder-instance",
        TELEGRAM_BOT_TOKEN: "123456:AAplaceholder-token-0123456789abcde",
        PG_URL: "postgres://bridge:pw@postgres:5432/bridge",
      };
      const parsed = parseConfig(parseJsonc(read("docker/daemon.json")), placeholders, "docker/daemon.json");
      expect(parsed.state).toMatchObject({ kind: "postgres", nodeId: name });
      expect(parsed.dataDir.startsWith("/data/")).toBe(true); // on the node's volume
    }
    expect(new Set(hostPorts).size).toBe(2);
    expect(config.ops.host).toBe("0.0.0.0");
  });
});

describe("the image's production install, run as the image runs it", () => {
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "agent-bridge-image-"));
    chmodSync(root, 0o755); // the image's user reads /app and writes /data
    for (const dir of ["app", "data", "config", "home"]) mkdirSync(join(root, dir));
    if (asRoot) for (const dir of ["data", "home"]) chownSync(join(root, dir), IMAGE_UID, IMAGE_UID);
    // The build stage's script's output (scripts/pack-production.mjs on dist/, built by the global
    // setup; one run shared with pack-install.test.ts: test/helpers/packed.ts), into /app as the
    // final stage's `COPY --from=build /out/ ./` puts it.
    cpSync(packedProduction(), join(root, "app"), { recursive: true });
    // The final stage's install, as written (without BuildKit's cache mount); from npm's local cache where it can.
    const install = finalSteps("RUN")
      .find((s) => s.args.includes("npm install"))!
      .args.replace(/--mount=\S+\s*/g, "");
    execFileSync("sh", ["-c", install], {
      cwd: join(root, "app"),
      stdio: "pipe",
      env: { ...process.env, npm_config_prefer_offline: "true", NODE_ENV: "production" },
    });
    cpSync(join(ROOT, "docker", "healthcheck.mjs"), join(root, "app", "healthcheck.mjs"));
  }, 240_000);

  afterAll(async () => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("holds the runtime dependencies and the platform libraries, and no development dependency", () => {
    const modules = join(root, "app", "node_modules");
    for (const name of ["agent-bridge", "express", "grammy", "discord.js", "@whiskeysockets/baileys", "pg"])
      expect(existsSync(join(modules, name)), name).toBe(true);
    for (const name of ["typescript", "esbuild", "vitest", "tsx", "@biomejs/biome"]) expect(existsSync(join(modules, name)), name).toBe(false);
  });

  it("CMD: the emulator answers its health check (admin token from the environment) and stops on SIGTERM", { timeout: 60_000 }, async () => {
    const port = String(await freePort());
    const token = "image-test-admin-token";
    const env = environment({ EMULATOR_ADMIN_TOKEN: token });
    const emulator = runAsImage(
      cmd.map((a) => (a === "8080" ? port : a)),
      env,
    );
    onTestFinished(() => void emulator.child.kill("SIGKILL"));
    await waitUntil(() => emulator.out().includes("emulator listening on"), "the emulator to listen", 30_000, 50);
    expect(emulator.out()).toContain(`state in ${join(root, "data", "emulator")}`);
    expect(emulator.out()).toContain("admin token required");
    const probe = { ...env, HEALTHCHECK_EMULATOR_PORT: port, HEALTHCHECK_OPS_PORT: String(await freePort()) };
    expect(await healthCheck(probe)).toEqual({ status: 0, output: `healthy: http://127.0.0.1:${port}/_emulator/health answered 200\n` });
    // Without the token the control plane refuses even loopback: the token came from the environment.
    expect((await fetch(`http://127.0.0.1:${port}/_emulator/health`)).status).toBe(401);
    expect((await healthCheck({ ...probe, EMULATOR_ADMIN_TOKEN: "wrong" })).status).toBe(1);

    expect(await stop(emulator)).toBe(0);
    expect(existsSync(join(root, "data", "emulator"))).toBe(true);
    expect(await healthCheck(probe)).toMatchObject({ status: 1, output: expect.stringContaining("nothing answers") });
  });

  it.skipIf(noPostgres)(
    "run, as compose.cluster.yaml runs it: two nodes on PostgreSQL answer their health checks and stop on SIGTERM",
    { timeout: 120_000 },
    async () => {
      const cluster = compose("compose.cluster.yaml");
      const db = await startTestPostgres();
      onTestFinished(() => db.close());
      const pgUrl = await db.createDatabase("image");
      const service = await startService();
      onTestFinished(() => service.close());
      const token = "777001:AAimage-test-token-0123456789abcdef";
      const telegram = await createFakeTelegram({ token });
      const owner = { id: 5101, username: "ana" };
      onTestFinished(() => telegram.close());

      // docker/daemon.json with three changes: Telegram is the fake here, the ops port a free one,
      // and the data folder each node's own (in the image, /data is each container's volume).
      const opsPorts = new Map<string, number>();
      const nodes: Running[] = [];
      for (const name of ["node-a", "node-b"]) {
        const node = cluster.services[name]!;
        const config = parseJsonc(read("docker/daemon.json")) as { dataDir: string; ops: { port: number }; channels: { apiRoot?: string }[] };
        opsPorts.set(name, await freePort());
        config.ops.port = opsPorts.get(name)!;
        config.dataDir = join(root, "data", name, relative("/data", config.dataDir));
        config.channels[0]!.apiRoot = telegram.url;
        // Each container has its own /config and /data: here, a file and a folder per node.
        const configFile = `/config/${name}.json`;
        writeFileSync(onHost(configFile), JSON.stringify(config));
        const env = environment({
          ...(node.environment as Record<string, string>),
          SERVICE_URL: service.url,
          AGENT_API_KEY: service.key,
          INSTANCE_ID: service.instanceIds[0]!,
          TELEGRAM_BOT_TOKEN: token,
          TELEGRAM_OWNER_ID: String(owner.id),
          OPS_TOKEN: "image-test-ops-token",
          PG_URL: pgUrl,
        });
        const args = node.command!.map((a) => (a === "/config/daemon.json" ? configFile : a));
        const running = runAsImage(args, env);
        onTestFinished(() => void running.child.kill("SIGKILL"));
        nodes.push(running);
      }
      const pool = new pg.Pool({ connectionString: pgUrl, max: 1 });
      onTestFinished(() => pool.end());
      const owned = waitUntil(
        async () => {
          const { rows } = await pool
            .query("SELECT holder FROM lease WHERE unit = 'telegram:tg' AND expires_at > clock_timestamp()")
            .catch(() => ({ rows: [] }));
          return (rows[0] as { holder?: string } | undefined)?.holder;
        },
        "a node to own the account",
        60_000,
        50,
      );
      const exited = nodes.map((n) => n.exited.then((code) => Promise.reject(new Error(`a node exited with ${code}:\n${n.out()}`))));
      await Promise.race([owned, ...exited]);
      for (const e of exited) e.catch(() => {}); // they exit at the end, on SIGTERM
      for (const [i, name] of ["node-a", "node-b"].entries()) {
        const probe = environment({ HEALTHCHECK_EMULATOR_PORT: String(await freePort()), HEALTHCHECK_OPS_PORT: String(opsPorts.get(name)) });
        // The owner once its Telegram adapter polls; the follower while it reaches the database.
        const health = await waitUntil(
          async () => {
            const h = await healthCheck(probe);
            return h.status === 0 && h;
          },
          `${name}'s health check (${nodes[i]!.out().slice(-2000)})`,
          30_000,
          100,
        );
        expect(health.output).toBe(`healthy: http://127.0.0.1:${opsPorts.get(name)}/healthz answered 200\n`);
      }
      telegram.privateText(owner, "hello");
      await waitUntil(() => telegram.sentMessages(owner.id).some((m) => m.text === "You said: hello"), "the reply to the owner", 30_000, 20);

      expect(await Promise.all(nodes.map(stop))).toEqual([0, 0]);
      expect((await pool.query("SELECT count(*)::int AS n FROM lease WHERE holder IS NOT NULL AND expires_at > clock_timestamp()")).rows[0]).toEqual({ n: 0 });
    },
  );

  it("start: the emulator and the terminal chat answer the health check and stop on SIGTERM", { timeout: 60_000 }, async () => {
    const port = String(await freePort());
    // As docs/bridge.md runs it: `docker run -it ... start --data-dir /data --port 8080`.
    const start = runAsImage(["start", "--data-dir", "/data/start", "--port", port], environment());
    onTestFinished(() => void start.child.kill("SIGKILL"));
    await waitUntil(() => start.out().includes("Type a message and press Enter"), "the chat to start", 30_000, 50);
    const probe = environment({ HEALTHCHECK_EMULATOR_PORT: port, HEALTHCHECK_OPS_PORT: String(await freePort()) });
    expect(await healthCheck(probe)).toEqual({ status: 0, output: `healthy: http://127.0.0.1:${port}/_emulator/health answered 200\n` });
    start.child.stdin!.write("hello\n");
    await waitUntil(() => start.out().includes("You said: hello"), "the reply", 30_000, 20);
    expect(await stop(start)).toBe(0);
    expect(existsSync(join(root, "data", "start", "credentials.json"))).toBe(true);
  });
});
