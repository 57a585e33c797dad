/**
 * The adapter contract, proved for every platform the registry lists: the
 * same cases run against each platform's real adapter wired to its fake
 * (harness/<type>.ts). A platform is done when this suite passes for it; a
 * registered platform without a harness fails here, naming the file to add.
 * Capabilities are proved where an adapter declares them (daemon/vocabulary/adapter.ts).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { platforms } from "../../../daemon/adapters/registry.js";
import { chunksFor } from "../../../daemon/core/delivery.js";
import { CAPABILITY_NAMES, SendError, type ChatTarget, type InboundMessage, type InboundSink } from "../../../daemon/vocabulary/adapter.js";
import { admitUpTo } from "../../fakes/sink.js";
import type { ContractHarness, HarnessFactory } from "./harness/harness.js";

const harnessFile = (type: string) => join(import.meta.dirname, "harness", `${type}.ts`);

/** A sink that keeps what it took; `refuseOnce` makes the first accept of that text fail (the journal was down). */
function recordingSink(refuseOnce?: string) {
  const accepted: InboundMessage[] = [];
  const offered: InboundMessage[] = [];
  let refused = false;
  const sink: InboundSink = {
    async accept(message) {
      offered.push(message);
      if (refuseOnce !== undefined && message.text === refuseOnce && !refused) {
        refused = true;
        throw new Error("journal unavailable");
      }
      accepted.push(message);
      return { status: "accepted", acknowledge: true };
    },
    admit: admitUpTo(1024 * 1024),
    status: () => undefined,
  };
  return { sink, accepted, offered };
}

const targetOf = (m: InboundMessage): ChatTarget => ({
  platform: m.platform,
  accountId: m.accountId,
  chatId: m.chatId,
  chatType: m.chatType,
  ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
  replyToMessageId: m.messageId,
});

const arrived = (accepted: InboundMessage[], text: string) =>
  vi.waitFor(
    () => {
      const found = accepted.find((m) => m.text === text);
      if (!found) throw new Error(`"${text}" has not reached the sink`);
      return found;
    },
    { timeout: 10_000, interval: 10 },
  );

const shows = (h: ContractHarness, chatId: string, text: string) =>
  vi.waitFor(
    () =>
      expect(
        h.shown(chatId).some((shown) => shown.includes(text)),
        `the chat shows "${text.slice(0, 40)}"`,
      ).toBe(true),
    {
      timeout: 10_000,
      interval: 10,
    },
  );

describe("every registered platform has a harness for the shared suite", () => {
  it.each(platforms.map((p) => p.type))("%s: test/daemon/adapters/harness/<type>.ts exists", (type) => {
    expect(existsSync(harnessFile(type)), `add test/daemon/adapters/harness/${type}.ts (see harness/harness.ts)`).toBe(true);
  });
});

describe.each(platforms.filter((p) => existsSync(harnessFile(p.type))).map((p) => [p.type, p] as const))("the adapter contract: %s", (type) => {
  /** Builds the harness, starts the adapter with `sink`, and on the way out stops both and checks the logs kept every secret. */
  async function started(sink: InboundSink): Promise<ContractHarness> {
    const { harness } = (await import(`./harness/${type}.ts`)) as { harness: HarnessFactory };
    const h = await harness();
    onTestFinished(async () => {
      await h.adapter.stop();
      await h.close();
      const logs = h.logs();
      for (const secret of h.secrets) expect(logs.includes(secret), `a secret of the ${type} channel in its logs`).toBe(false);
    });
    const starting = h.adapter.start(sink);
    await h.connected?.();
    await starting;
    return h;
  }

  it("is the platform it is registered as, with each capability an object or absent", async () => {
    const h = await started(recordingSink().sink);
    expect(h.adapter.platform).toBe(type);
    for (const name of CAPABILITY_NAMES) expect(["undefined", "object"], name).toContain(typeof h.adapter[name]);
    expect(h.adapter.limits.maxMessageLength).toBeGreaterThan(0);
    expect(typeof h.adapter.redelivers).toBe("boolean");
  });

  it("hands a direct message to the sink with its platform, account, ids and chat type, and delivers a reply to it", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    await h.direct("hello from a person");
    const message = await arrived(accepted, "hello from a person");
    expect(message).toMatchObject({ platform: type, accountId: h.adapter.accountId, chatType: "direct" });
    for (const id of [message.chatId, message.userId, message.messageId]) expect(id).toMatch(/\S/);
    await h.adapter.send(targetOf(message), "hello from the bot", { format: "plain" });
    await shows(h, message.chatId, "hello from the bot");
  });

  it("hands a group message that addresses the bot to the sink as a group's", async (context) => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    if (!h.group) return context.skip();
    await h.group("hello, group");
    const message = await arrived(accepted, "hello, group");
    expect(message).toMatchObject({ platform: type, chatType: "group" });
    expect(message.mentioned).not.toBe(false);
    await h.adapter.send(targetOf(message), "hello back, group", { format: "plain" });
    await shows(h, message.chatId, "hello back, group");
  });

  it("takes a reply the core split by its measure, every chunk within maxMessageLength", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    await h.direct("a long one, please");
    const message = await arrived(accepted, "a long one, please");
    const max = h.adapter.limits.maxMessageLength;
    const words = Array.from({ length: Math.ceil((max * 1.5) / 8) }, (_, i) => `w${String(i).padStart(6, "0")}`);
    const chunks = chunksFor(h.adapter, words.join(" "), "markdown");
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(h.adapter.measure(chunk, "markdown")).toBeLessThanOrEqual(max);
      await h.adapter.send(targetOf(message), chunk, { format: "markdown" });
    }
    await shows(h, message.chatId, words.at(-1)!);
    for (const chunk of chunks) await shows(h, message.chatId, chunk.trim().slice(0, 60));
  });

  it("does not lose a message the sink could not take: the platform brings it again (redelivers), or the adapter goes on with the next", async () => {
    const { sink, accepted, offered } = recordingSink("first try");
    const h = await started(sink);
    await h.direct("first try");
    if (h.adapter.redelivers) {
      const again = await arrived(accepted, "first try");
      expect(offered.filter((m) => m.text === "first try").map((m) => m.messageId)).toEqual([again.messageId, again.messageId]);
    } else {
      await vi.waitFor(() => expect(offered.map((m) => m.text)).toContain("first try"));
      await h.direct("second try");
      await arrived(accepted, "second try");
    }
  });

  it("edits a message in place (edits)", async (context) => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const edits = h.adapter.edits;
    if (!edits) return context.skip();
    await h.direct("edit something");
    const message = await arrived(accepted, "edit something");
    const target = targetOf(message);
    const receipt = await h.adapter.send(target, "before the edit", { format: "plain" });
    expect(receipt?.messageId, "send gives the message id an edit needs").toMatch(/\S/);
    await edits.edit(target, receipt!.messageId!, "after the edit", { format: "plain" });
    await shows(h, message.chatId, "after the edit");
    expect(h.shown(message.chatId).some((shown) => shown.includes("before the edit"))).toBe(false);
    if (edits.end) {
      await edits.end(target, receipt!.messageId!, "after the edit");
      await shows(h, message.chatId, "after the edit");
    }
    const refused = await edits.edit(target, "9999999999", "no such message", { format: "plain" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(SendError);
    for (const secret of h.secrets) expect(String((refused as Error).message)).not.toContain(secret);
  });

  it("writes a reply as it comes (appends)", async (context) => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const appends = h.adapter.appends;
    if (!appends) return context.skip();
    await h.direct("stream it");
    const message = await arrived(accepted, "stream it");
    await appends.write(targetOf(message), "piece one, ", { end: false });
    await appends.write(targetOf(message), "piece two", { end: true });
    await shows(h, message.chatId, "piece one, piece two");
  });

  it("sends a file within its limits (files)", async (context) => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const files = h.adapter.files;
    if (!files) return context.skip();
    for (const kind of ["photo", "voice", "document"] as const) expect(files.limits[kind]).toBeGreaterThan(0);
    await h.direct("send a file");
    const message = await arrived(accepted, "send a file");
    const data = Buffer.from("the report\n");
    expect(data.length).toBeLessThanOrEqual(files.limits.document);
    await files.send(targetOf(message), { path: "out/contract-report.txt", fileName: "contract-report.txt", mimeType: "text/plain", kind: "document", data });
    await vi.waitFor(() => expect(h.files(message.chatId)).toContain("contract-report.txt"));
  });

  it("asks with buttons, hands a tap to the sink as the answer, and takes the buttons away (buttons)", async (context) => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const buttons = h.adapter.buttons;
    if (!buttons) return context.skip();
    expect(h.buttons && h.tap, `harness/${type}.ts must read and tap buttons: the adapter has them`).toBeTruthy();
    await h.direct("ask me");
    const message = await arrived(accepted, "ask me");
    const target = targetOf(message);
    const question = { id: "q1x2y3", text: "Deploy where?", options: ["staging", "production"], allowText: false };
    const receipt = await buttons.ask(target, question);
    expect(receipt?.messageId, "ask gives the message id close needs").toMatch(/\S/);
    await vi.waitFor(() => expect(h.buttons!(message.chatId, receipt!.messageId!)).toEqual(["staging", "production"]));
    await h.tap!(message.chatId, receipt!.messageId!, 1);
    const tap = await vi.waitFor(
      () => {
        const found = accepted.find((m) => m.answers);
        if (!found) throw new Error("the tap has not reached the sink");
        return found;
      },
      { timeout: 10_000, interval: 10 },
    );
    expect(tap).toMatchObject({
      platform: message.platform,
      accountId: message.accountId,
      chatId: message.chatId,
      text: "2",
      answers: { questionId: "q1x2y3" },
    });
    expect(tap.messageId).toMatch(/\S/);
    await buttons.close(target, receipt!.messageId!, question, "Deploy where?\nproduction: chosen by alice");
    await shows(h, message.chatId, "Deploy where?\nproduction: chosen by alice");
    expect(h.buttons!(message.chatId, receipt!.messageId!)).toEqual([]);
  });

  it("sets and removes its reaction on a person's message (reactions)", async (context) => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const reactions = h.adapter.reactions;
    if (!reactions) return context.skip();
    expect(h.reactions, `harness/${type}.ts must read reactions: the adapter has them`).toBeDefined();
    await h.direct("react to this");
    const message = await arrived(accepted, "react to this");
    await reactions.react(targetOf(message), message.messageId, "👀", { remove: false });
    await vi.waitFor(() => expect(h.reactions!(message.chatId, message.messageId)).toHaveLength(1));
    await reactions.react(targetOf(message), message.messageId, "👀", { remove: true });
    await vi.waitFor(() => expect(h.reactions!(message.chatId, message.messageId)).toEqual([]));
  });
});
