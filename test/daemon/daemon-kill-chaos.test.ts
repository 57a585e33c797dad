import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "../../shared/random.js";
import { createLossyProxy, responsesInput, type LossyProxy } from "../helpers/lossy-proxy.js";
import { startService, tempDir, type Service } from "./daemon-harness.js";
import { acceptedCount, occurrences, startDaemonProcess, until, type DaemonChild, writeDaemonConfig } from "./daemon-process.js";

let service: Service;
let proxy: LossyProxy;
beforeAll(async () => {
  service = await startService();
  proxy = await createLossyProxy(service.url);
});
afterAll(async () => {
  await proxy.close();
  await service.close();
});

function writeConfig(dir: string, requestTimeoutMs = 5000): { configFile: string; dataDir: string } {
  return writeDaemonConfig(dir, {
    service: { baseUrl: proxy.url, requestTimeoutMs },
    apiKey: service.key,
    instance: service.instanceIds[0]!,
    // Whole replies: a line printed as it comes cannot be taken back, so the one-chunk window is a whole line here.
    channels: [{ type: "terminal", id: "terminal", streaming: "off" }],
  });
}

const REPLY = "agent> ";

describe("daemon killed with SIGKILL while answers are lost", () => {
  it("a first turn whose answer was lost before the kill is in the conversation once after the restart", { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const { configFile } = writeConfig(dir.path);
    const children: DaemonChild[] = [];
    try {
      proxy.setPolicy((r) => (responsesInput(r) === "first words" ? "hold" : "pass"));
      const first = startDaemonProcess(configFile);
      children.push(first);
      first.proc.stdin.write("first words\n");
      // The gateway answered (and recorded the turn); the daemon never hears of it.
      await proxy.nextHeld();
      first.kill();
      await first.exited;
      proxy.setPolicy(() => "pass");

      const second = startDaemonProcess(configFile);
      children.push(second);
      await second.waitFor((o) => o.includes(`${REPLY}You said: first words`), "the resumed reply");
      second.proc.stdin.write("second words\n");
      await second.waitFor((o) => o.includes(`${REPLY}You said: second words`), "the second reply");
      second.proc.stdin.write("!recall\n");
      await second.waitFor((o) => o.includes(`${REPLY}first words`), "the recall");
      second.proc.stdin.end();
      expect(await second.exited).toBe(0);
      expect(second.out()).toContain(`${REPLY}first words\nsecond words\n`);
      expect(occurrences(`${first.out()}\n${second.out()}`, `${REPLY}You said: first words`)).toBe(1);
    } finally {
      for (const c of children) c.kill();
      proxy.setPolicy(() => "pass");
      delete process.env.BRIDGE_TEST_KEY;
      dir.remove();
    }
  });

  it("random kills and lost answers: every input once in !recall, in order, every reply once but the one-chunk window", { timeout: 120_000 }, async () => {
    const seed = Number(process.env.BRIDGE_CHAOS_SEED || Math.floor(Math.random() * 1_000_000));
    console.log(`daemon kill chaos seed: ${seed} (BRIDGE_CHAOS_SEED=${seed} repeats it)`);
    const random = seededRandom(seed);
    const pick = (n: number) => Math.floor(random.float() * n);
    const dir = tempDir();
    // A request timeout the control plane's gateway latency can outlast.
    const { configFile, dataDir } = writeConfig(dir.path, 1000);
    const children: DaemonChild[] = [];
    /** Replies printed at the moment of a kill: the one-chunk window may show them twice. */
    const windowReplies = new Set<string>();
    const ROUNDS = 3;
    const PER_ROUND = 3;
    try {
      let daemon = startDaemonProcess(configFile);
      children.push(daemon);
      let journaled = 0;
      for (let round = 1; round <= ROUNDS; round++) {
        const inputs = Array.from({ length: PER_ROUND }, (_, i) => `r${round}-${i + 1}`);
        // Every round starts a conversation: its first input is a first turn.
        daemon.proc.stdin.write("/new\n");
        await until(
          () =>
            children
              .map((c) => c.out())
              .join("\n")
              .split("Started a new conversation").length -
              1 >=
            round,
          "the /new answer",
        );
        journaled += 1;

        // Calls wait until all inputs are journaled (the terminal cannot deliver twice), then meet their fate.
        let release!: () => void;
        const allJournaled = new Promise<void>((r) => (release = r));
        const killAt = 1 + pick(PER_ROUND);
        const how = (["hold", "drop", "printed"] as const)[pick(3)]!;
        let calls = 0;
        let killed!: () => void;
        const killNow = new Promise<void>((r) => (killed = r));
        // Sometimes the gateway also answers one call of the round later than the daemon waits (control plane).
        const slow = pick(2) === 0;
        if (slow) await service.admin("/_emulator/faults", { target: "gateway", instance_id: service.instanceIds[0], latency_ms: 1700, times: 1 });
        console.log(`round ${round}: kill ${how} at call/reply ${killAt}${slow ? ", one gateway answer slower than the request timeout" : ""}`);
        proxy.setPolicy(async (r) => {
          const input = responsesInput(r);
          if (input === undefined || !inputs.includes(input)) return "pass";
          await allJournaled;
          calls++;
          if (how !== "printed" && calls === killAt) {
            killed();
            return how;
          }
          return random.float() < 0.3 ? "reset" : "pass";
        });
        const current = daemon;
        const off = current.onOutput((out) => {
          const line = `${REPLY}You said: ${inputs[killAt - 1]}`;
          if (how === "printed" && out.includes(line)) {
            windowReplies.add(line);
            current.kill();
            killed();
          }
        });
        current.proc.stdin.write(inputs.map((t) => `${t}\n`).join(""));
        journaled += PER_ROUND;
        await until(() => acceptedCount(dataDir) >= journaled, "the round's inputs journaled");
        release();
        await killNow;
        current.kill();
        off();
        await current.exited;
        proxy.setPolicy(() => "pass");
        await service.clearFaults();

        daemon = startDaemonProcess(configFile);
        children.push(daemon);
        const all = () => children.map((c) => c.out()).join("\n");
        await until(() => inputs.every((t) => all().includes(`${REPLY}You said: ${t}`)), `round ${round}'s replies`, 30_000);
        daemon.proc.stdin.write("!recall\n");
        journaled += 1;
        await daemon.waitFor((o) => o.includes(`${REPLY}${inputs[0]}`), `round ${round}'s recall`);
        expect(daemon.out()).toContain(`${REPLY}${inputs.join("\n")}\n`);
      }
      daemon.proc.stdin.end();
      expect(await daemon.exited).toBe(0);

      const all = children.map((c) => c.out()).join("\n");
      for (let round = 1; round <= ROUNDS; round++) {
        for (let i = 1; i <= PER_ROUND; i++) {
          const line = `${REPLY}You said: r${round}-${i}`;
          const n = occurrences(all, line);
          if (windowReplies.has(line)) expect(n, line).toBeGreaterThanOrEqual(1);
          else expect(n, line).toBe(1);
          expect(n, line).toBeLessThanOrEqual(2);
        }
        // Each input once in its round's conversation.
        expect(occurrences(all, `${REPLY}r${round}-1`)).toBe(1);
      }
    } finally {
      for (const c of children) c.kill();
      proxy.setPolicy(() => "pass");
      delete process.env.BRIDGE_TEST_KEY;
      dir.remove();
    }
  });
});
