import { describe, expect, it } from "vitest";
import { parseCommand, runCommand, type CommandContext } from "../../daemon/core/commands.js";
import { backoffDelay } from "../../shared/backoff.js";
import { replyTextOf, responseIdOf } from "../../daemon/core/reply.js";
import { seededRandom } from "../../shared/random.js";

const context = (over: Partial<CommandContext> = {}): CommandContext => ({
  platform: "telegram",
  accountId: "bot1",
  chatId: "-100",
  chatType: "group",
  userId: "42",
  userName: "Ann",
  instanceId: "inst-1",
  sessionId: "telegram.bot1.group.-100",
  chained: true,
  sessionReset: "2026-11-25 04:00 (Europe/Berlin), the daily reset, unless /new comes first",
  resetSession: async () => "telegram.bot1.group.-100.g1",
  instanceStatus: async () => "running",
  stopTurn: async () => ({ stopped: true, dropped: 2 }),
  queue: { sessionWaiting: 2, sessionBusy: true, instanceWaiting: 5, instanceRunning: 3, totalWaiting: 9 },
  approvePairing: async (code) => `approved ${code}`,
  queueMode: { mode: "followup", chosen: false },
  setQueueMode: async () => undefined,
  listSchedules: () => "the schedules",
  link: async (code) => `linked ${code}`,
  unlink: async () => "unlinked",
  ...over,
});

describe("commands", () => {
  it("recognises the bridge's commands, with a bot suffix and any case, and nothing else", () => {
    expect(parseCommand("/new")).toEqual({ name: "new", args: "" });
    expect(parseCommand("  /STATUS@my_bot please")).toEqual({ name: "status", args: "please" });
    expect(parseCommand("/whoami\nmore")).toEqual({ name: "whoami", args: "more" });
    expect(parseCommand("/newer")).toBeUndefined();
    expect(parseCommand("/deploy now")).toBeUndefined(); // the agent's business
    expect(parseCommand("please /new")).toBeUndefined();
    expect(parseCommand("")).toBeUndefined();
  });

  it("answers /status, /whoami, /help and /new from the context", async () => {
    const status = await runCommand("status", context({ routeStopped: "the service answered 403" }));
    expect(status).toContain("Instance: inst-1 (running)");
    expect(status).toContain("Session: telegram.bot1.group.-100");
    expect(status).toContain("1 being answered, 2 waiting");
    expect(status).toContain("3 running, 5 waiting");
    expect(status).toContain("Route stopped: the service answered 403");
    expect(status).toContain("Session resets: 2026-11-25 04:00 (Europe/Berlin), the daily reset");
    const who = await runCommand("whoami", context({ userAliases: ["+4915"] }));
    expect(who).toContain("Platform: telegram (account bot1)");
    expect(who).toContain("User: 42 (Ann)");
    expect(who).toContain("Also known as: +4915");
    expect(who).not.toContain("Thread:");
    // In a thread: its id, what a schedule names to speak there.
    expect(await runCommand("whoami", context({ threadId: "7" }))).toContain("Chat: -100 (group)\nThread: 7");
    expect(await runCommand("help", context())).toMatch(/\/new: .*\n.*\/reset/);
    expect(await runCommand("help", context())).toMatch(/^\/stop: stop the answer being written and drop your queued messages$/m);
    expect(parseCommand("/stop")).toEqual({ name: "stop", args: "" });
    expect(await runCommand("stop", context())).toBe("Stopped the answer in progress. Dropped 2 queued messages.");
    expect(await runCommand("stop", context({ stopTurn: async () => ({ stopped: false, dropped: 1 }) }))).toBe(
      "No answer was in progress. Dropped 1 queued message.",
    );
    let resets = 0;
    const fresh = await runCommand("new", context({ resetSession: async () => `s.g${++resets}` }));
    expect(resets).toBe(1);
    expect(fresh).toContain("Session: s.g1");
  });
});

describe("/queue", () => {
  it("says the chat's mode and where it comes from", async () => {
    expect(await runCommand("queue", context())).toMatch(/^Queue mode: followup \(the bridge's setting\)/);
    expect(await runCommand("queue", context({ queueMode: { mode: "collect", chosen: true } }))).toMatch(/^Queue mode: collect \(chosen for this chat\)/);
  });

  it("sets a mode, goes back to the config's with default, and refuses an unknown word without changing anything", async () => {
    const set: (string | undefined)[] = [];
    const ctx = context({
      setQueueMode: async (mode) => {
        set.push(mode);
        return undefined;
      },
    });
    expect(await runCommand("queue", ctx, "Interrupt")).toMatch(/^Queue mode for this chat: interrupt/);
    expect(await runCommand("queue", ctx, "default")).toBe("This chat follows the bridge's queue setting again.");
    expect(await runCommand("queue", ctx, "steer")).toMatch(/^Unknown queue mode "steer"/);
    expect(set).toEqual(["interrupt", undefined]);
  });

  it("passes on a refusal (a group member who is not an owner)", async () => {
    const ctx = context({ setQueueMode: async () => "only owners" });
    expect(await runCommand("queue", ctx, "collect")).toBe("only owners");
  });
});

describe("reply text", () => {
  it("takes the output_text blocks of assistant messages, in order", () => {
    const response = {
      id: "resp_1",
      output: [
        { type: "reasoning", content: [{ type: "output_text", text: "hidden" }] },
        {
          type: "message",
          role: "assistant",
          content: [
            { type: "output_text", text: "one" },
            { type: "refusal", refusal: "x" },
          ],
        },
        { type: "message", role: "user", content: [{ type: "output_text", text: "not mine" }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "two" }] },
      ],
    };
    expect(replyTextOf(response)).toBe("one\n\ntwo");
    expect(responseIdOf(response)).toBe("resp_1");
    expect(replyTextOf({ output: "nonsense" })).toBe("");
    expect(replyTextOf(null)).toBe("");
    expect(responseIdOf({})).toBeUndefined();
  });
});

describe("backoff", () => {
  it("grows exponentially with jitter and stays under the cap", () => {
    const random = seededRandom(1);
    for (let attempt = 1; attempt <= 12; attempt++) {
      const full = Math.min(1000, 10 * 2 ** (attempt - 1));
      const d = backoffDelay(attempt, { baseMs: 10, maxMs: 1000 }, random);
      expect(d).toBeGreaterThanOrEqual(full / 2);
      expect(d).toBeLessThanOrEqual(full);
    }
  });
});
