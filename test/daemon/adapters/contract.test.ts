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
import { chunksFor, targetOf as coreTargetOf } from "../../../daemon/core/delivery.js";
import { contextKeyOf, listedSettingsId, threadSettingsIdOf } from "../../../daemon/vocabulary/conversation.js";
import { chatKeyOf } from "../../../daemon/vocabulary/keys.js";
import { sessionBaseFor } from "../../../daemon/core/routing.js";
import { CAPABILITY_NAMES, SendError, type ChatTarget, type InboundMessage, type InboundSink } from "../../../daemon/vocabulary/adapter.js";
import { admitUpTo } from "../../fakes/sink.js";
import type { ContractHarness, Feature, HarnessFactory } from "./harness/harness.js";

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

/** Each harnessed platform with what its harness declares it has (read before any case is registered). */
const harnessed = await Promise.all(
  platforms
    .filter((p) => existsSync(harnessFile(p.type)))
    .map(async (p) => [p.type, ((await import(`./harness/${p.type}.ts`)) as { features: readonly Feature[] }).features] as const),
);

describe.each(harnessed)("the adapter contract: %s", (type, features) => {
  /** A case for what the platform declares; none at all for what it lacks (under CI=true a skipped case fails the run). */
  const where = (feature: Feature) => (features.includes(feature) ? it : () => {});
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
    // What the harness declares is what the adapter has: a capability gained or lost shows here.
    for (const name of CAPABILITY_NAMES) expect(h.adapter[name] !== undefined, `${name} (harness/${type}.ts features)`).toBe(features.includes(name));
    expect(h.group !== undefined, "group").toBe(features.includes("group"));
    expect(h.thread !== undefined, "thread").toBe(features.includes("thread"));
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
    // Typing is best effort: it never rejects.
    await expect(h.adapter.sendTyping(targetOf(message))).resolves.toBeUndefined();
  });

  it("stops, and stops again without harm (stop is idempotent)", async () => {
    const h = await started(recordingSink().sink);
    await h.adapter.stop();
    await expect(h.adapter.stop()).resolves.toBeUndefined();
  });

  where("group")("hands a group message that addresses the bot to the sink as a group's", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    if (!h.group) throw new Error("declared group chats, has none");
    await h.group("hello, group");
    const message = await arrived(accepted, "hello, group");
    expect(message).toMatchObject({ platform: type, chatType: "group" });
    expect(message.mentioned).not.toBe(false);
    await h.adapter.send(targetOf(message), "hello back, group", { format: "plain" });
    await shows(h, message.chatId, "hello back, group");
  });

  where("thread")("keeps a thread a conversation of its own under its group's settings, and answers into it (the one thread rule)", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    if (!h.thread || !h.group) throw new Error("declared threads, has none");
    await h.group("in the group");
    const inGroup = await arrived(accepted, "in the group");
    await h.thread.say("in the thread");
    const inThread = await arrived(accepted, "in the thread");
    expect(inThread).toMatchObject({ platform: type, chatType: "group" });
    expect(inThread.mentioned).not.toBe(false);
    // One shape (vocabulary/conversation.ts): the thread is a threadId within the group's own chat; the
    // group's top level has none, unless the message roots a thread of its own (startsThread).
    expect(inThread.chatId).toBe(inGroup.chatId);
    expect(inThread.threadId).toMatch(/\S/);
    expect(inThread.startsThread).toBeUndefined();
    expect(inGroup.threadId === undefined || inGroup.startsThread === true, "the group's top level has no thread of its own").toBe(true);
    // Its own session, group context and bookkeeping.
    expect(sessionBaseFor(inThread, "group")).not.toBe(sessionBaseFor(inGroup, "group"));
    expect(contextKeyOf(inThread)).not.toBe(contextKeyOf(inGroup));
    expect(chatKeyOf(inThread)).not.toBe(chatKeyOf(inGroup));
    // The group's settings reach it: the config's entry for the group is the one found for the thread.
    expect(listedSettingsId(inThread, { [inGroup.chatId]: {} })).toBe(inGroup.chatId);
    // Its own entry, `<chat>:<thread>`, before the group's; never its bare id (unique only within its chat on some platforms).
    const own = threadSettingsIdOf({ chatId: inThread.chatId, threadId: inThread.threadId ?? "" });
    expect(listedSettingsId(inThread, { [inGroup.chatId]: {}, [own]: {} })).toBe(own);
    expect(listedSettingsId({ chatId: `${inThread.chatId}-elsewhere`, threadId: inThread.threadId }, { [own]: {} })).toBeUndefined();
    // A second message of the thread is the same conversation.
    await h.thread.say("again in the thread");
    const again = await arrived(accepted, "again in the thread");
    expect([again.chatId, again.threadId, sessionBaseFor(again, "group")]).toEqual([inThread.chatId, inThread.threadId, sessionBaseFor(inThread, "group")]);
    // The reply goes where the core's one reply place says: into the thread.
    await h.adapter.send(coreTargetOf(inThread), "answered in the thread", { format: "plain" });
    await vi.waitFor(() => expect(h.thread?.shown()).toContain("answered in the thread"));
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

  where("edits")("edits a message in place (edits)", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const edits = h.adapter.edits;
    if (!edits) throw new Error("declared edits, has none");
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

  where("appends")("writes a reply as it comes (appends)", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const appends = h.adapter.appends;
    if (!appends) throw new Error("declared appends, has none");
    await h.direct("stream it");
    const message = await arrived(accepted, "stream it");
    await appends.write(targetOf(message), "piece one, ", { end: false });
    await appends.write(targetOf(message), "piece two", { end: true });
    await shows(h, message.chatId, "piece one, piece two");
  });

  where("files")("sends a file within its limits (files)", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const files = h.adapter.files;
    if (!files) throw new Error("declared files, has none");
    for (const kind of ["photo", "voice", "document"] as const) expect(files.limits[kind]).toBeGreaterThan(0);
    await h.direct("send a file");
    const message = await arrived(accepted, "send a file");
    const data = Buffer.from("the report\n");
    expect(data.length).toBeLessThanOrEqual(files.limits.document);
    await files.send(targetOf(message), { path: "out/contract-report.txt", fileName: "contract-report.txt", mimeType: "text/plain", kind: "document", data });
    await vi.waitFor(() => expect(h.files(message.chatId)).toContain("contract-report.txt"));
  });

  where("buttons")("asks with buttons, hands a tap to the sink as the answer, and takes the buttons away (buttons)", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const buttons = h.adapter.buttons;
    if (!buttons) throw new Error("declared buttons, has none");
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

  where("reactions")("sets and removes its reaction on a person's message (reactions)", async () => {
    const { sink, accepted } = recordingSink();
    const h = await started(sink);
    const reactions = h.adapter.reactions;
    if (!reactions) throw new Error("declared reactions, has none");
    expect(h.reactions, `harness/${type}.ts must read reactions: the adapter has them`).toBeDefined();
    await h.direct("react to this");
    const message = await arrived(accepted, "react to this");
    await reactions.react(targetOf(message), message.messageId, "👀", { remove: false });
    await vi.waitFor(() => expect(h.reactions!(message.chatId, message.messageId)).toHaveLength(1));
    await reactions.react(targetOf(message), message.messageId, "👀", { remove: true });
    await vi.waitFor(() => expect(h.reactions!(message.chatId, message.messageId)).toEqual([]));
  });
});
