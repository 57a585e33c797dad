/**
 * The queue modes as a person meets them on a platform, shared by each
 * platform's end-to-end test: `/queue collect` makes what came while a turn
 * ran one next turn; `/queue interrupt` makes a newer message stop the
 * running answer and be answered with it. A turn is kept at the service with
 * the fake model's `!sleep`, on the emulator's manual clock: nothing waits on
 * real time.
 */
import { expect, vi } from "vitest";
import type { ServiceFixture } from "./bridge.js";

export interface QueueModeChat {
  service: ServiceFixture;
  /** Sends a text from the person, in their direct chat with the bot. */
  send(text: string): void;
  /** The texts the bot sent to that chat so far, in order. */
  replies(): string[];
  /** Messages waiting in the daemon's queues (its health report). */
  queued(): number;
}

export async function exerciseQueueModes(chat: QueueModeChat): Promise<void> {
  const { service } = chat;
  const said = async (n: number) => {
    await vi.waitFor(() => expect(chat.replies().length).toBeGreaterThanOrEqual(n), { timeout: 15_000 });
    return chat.replies().slice(0, n);
  };
  chat.send("/queue collect");
  expect((await said(1))[0]).toMatch(/^Queue mode for this chat: collect/);

  const first = service.nextSleep(5000);
  chat.send("!sleep 5000");
  await first;
  chat.send("a");
  chat.send("b");
  await vi.waitFor(() => expect(chat.queued()).toBe(2)); // both taken while the turn runs
  service.emulator.clock.advance(5000);
  expect((await said(3)).slice(1)).toEqual(["slept 5000", "You said: (2 messages, in the order they were sent:)\n\n[1] a\n\n[2] b"]);

  chat.send("/queue interrupt");
  expect((await said(4))[3]).toMatch(/^Queue mode for this chat: interrupt/);
  const second = service.nextSleep(6000);
  chat.send("!sleep 6000");
  await second;
  chat.send("c");
  expect((await said(5))[4]).toBe("You said: (2 messages, in the order they were sent:)\n\n[1] !sleep 6000\n\n[2] c");
  service.emulator.clock.advance(6000); // the stopped call's wait ends at the service; its answer goes nowhere
  chat.send("!recall");
  const chain = (await said(6))[5]!;
  expect(chain.split("[1] a").length - 1).toBe(1);
  // The stopped message is in the conversation once: in the turn that answered it, not also on its own.
  expect(chain.split("!sleep 6000").length - 1).toBe(1);
  expect(chain).toContain("[1] !sleep 6000");
  expect(chat.replies()).toHaveLength(6);
}
