/**
 * `/stop` on a turn whose answer is not streamed: the daemon closes the
 * request, it does not only stop waiting for it. The emulator's fake model
 * holds `!sleep 700` until the test releases it, so "closed while the model
 * still ran" is seen in the emulator's request log (a line is written when a
 * request ends: answered, or left by its client), never by sleeping.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { startBridge, startService, tempDir, testConfig, type Service } from "./daemon-harness.js";

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service.close();
});

/** Lines in the emulator's request log for a person's non-streamed calls. */
async function endedResponseCalls(): Promise<number> {
  const res = await fetch(`${service.url}/_emulator/console/requests`);
  const lines = (await res.json()) as { method: string; path: string }[];
  return lines.filter((l) => l.method === "POST" && l.path.endsWith("/responses")).length;
}

describe("/stop with streaming off", () => {
  it("closes the call at the service while the model still runs, and tells the person", async () => {
    const dir = tempDir();
    const { chat, daemon } = await startBridge(testConfig(service, dir.path));
    onTestFinished(dir.remove);
    onTestFinished(() => daemon.stop({ graceMs: 0 }));
    const held = service.hold(700);
    onTestFinished(held.release);
    const before = await endedResponseCalls();
    await chat.inject({ userId: "stella", text: "!sleep 700" });
    await held.started; // the call is at the model, which waits for the release
    await chat.inject({ userId: "stella", text: "/stop" });
    const [told] = await chat.waitForReplies("stella", 1);
    expect(told!.text).toMatch(/^Stopped the answer in progress\./);
    // The request ended at the service although the model has not answered: the daemon closed it.
    await vi.waitFor(async () => expect(await endedResponseCalls()).toBe(before + 1));
    await daemon.whenIdle();
    held.release();
    expect(chat.repliesTo("stella").map((r) => r.text)).toEqual([told!.text]);
  });
});
