/**
 * The Discord hand-over: a channel's messages reach the core in the order
 * Discord sent them, each after the one before settled, while other channels
 * go on; files the core will not take are named for it, never fetched.
 * (Downloads themselves run against the fake Discord in ../discord-adapter.test.ts.)
 */
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { DiscordHandOver } from "../../../daemon/adapters/discord/hand-over.js";
import type { DiscordAttachmentView } from "../../../daemon/adapters/discord/inbound.js";
import type { AdmissionQuestion, InboundMessage } from "../../../daemon/vocabulary/adapter.js";
import { testSink } from "../../fakes/sink.js";

const quiet = pino({ level: "silent" }, new Writable({ write: (_c, _e, done) => done() }));
const intakeOf = () => new DiscordHandOver({ log: quiet, redact: (text) => text, attachmentTimeoutMs: 1_000 });

const message = (chatId: string, messageId: string, text = `m${messageId}`): InboundMessage => ({
  platform: "discord",
  accountId: "dc",
  chatId,
  chatType: "direct",
  userId: "31",
  messageId,
  text,
  sentAt: 0,
});

// Never fetched: the admission below says no to every file.
const file = (id: string, size: number): DiscordAttachmentView => ({ id, name: `f${id}.bin`, url: "http://127.0.0.1:9/unreachable", size, contentType: null });

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe("DiscordHandOver", () => {
  it("hands a channel's messages over one at a time, in order, while another channel goes on", async () => {
    const intake = intakeOf();
    const first = gate();
    const otherDone = gate();
    const order: string[] = [];
    intake.open(
      testSink({
        accept: async (m) => {
          order.push(`start ${m.messageId}`);
          if (m.messageId === "1") await first.opened;
          order.push(`end ${m.messageId}`);
          if (m.messageId === "3") otherDone.open();
        },
      }),
    );
    intake.take(message("A", "1"), []);
    intake.take(message("A", "2"), []);
    intake.take(message("B", "3"), []);
    await otherDone.opened;
    expect(order).not.toContain("start 2");
    first.open();
    await intake.idle();
    expect(order).toEqual(["start 1", "start 3", "end 3", "end 1", "start 2", "end 2"]);
  });

  it("names the files the core will not take, for it to tell the sender, without fetching them", async () => {
    const intake = intakeOf();
    const received: InboundMessage[] = [];
    const questions: AdmissionQuestion[] = [];
    intake.open({
      ...testSink({ accept: (m) => void received.push(m) }),
      admit: (question) => {
        questions.push(question);
        return {
          allowed: true,
          attachments: [
            { fetch: false, reason: "too_large" },
            { fetch: false, reason: "disabled" },
          ],
        };
      },
    });
    intake.take(message("A", "1", "see files"), [file("7", 5_000_000), file("8", 10)]);
    await intake.idle();
    expect(questions.map((q) => q.attachmentSizes)).toEqual([[5_000_000, 10]]);
    expect(received).toHaveLength(1);
    expect(received[0]?.text).toBe("see files");
    expect(received[0]?.attachments).toBeUndefined();
    expect(received[0]?.droppedAttachments).toEqual([
      { fileName: "f7.bin", reason: "too_large" },
      { fileName: "f8.bin", reason: "disabled" },
    ]);
  });

  it("lets the core refuse a stranger's text itself, but hands over nothing for a stranger's bare file", async () => {
    const intake = intakeOf();
    const received: InboundMessage[] = [];
    intake.open({ ...testSink({ accept: (m) => void received.push(m) }), admit: () => ({ allowed: false, attachments: [] }) });
    intake.take(message("A", "1", ""), [file("7", 10)]);
    intake.take(message("A", "2", "hello?"), [file("8", 10)]);
    await intake.idle();
    expect(received.map((m) => [m.messageId, m.attachments, m.droppedAttachments])).toEqual([["2", undefined, undefined]]);
  });

  it("drops messages that come before the core opened it, and keeps going after a failed hand-over", async () => {
    const intake = intakeOf();
    intake.take(message("A", "0"), []);
    await intake.idle();
    const received: string[] = [];
    intake.open(
      testSink({
        accept: (m) => {
          if (m.messageId === "1") throw new Error("journal full");
          received.push(m.messageId);
        },
      }),
    );
    intake.take(message("A", "1"), []);
    intake.take(message("A", "2"), []);
    await intake.idle();
    expect(received).toEqual(["2"]);
  });
});
