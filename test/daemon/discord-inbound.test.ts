/**
 * The Discord adapter's pure rules: who is heard, what text the core gets,
 * how attachments are named. The same rules run end to end in
 * discord-adapter.test.ts; these cover the corners.
 */
import { describe, expect, it } from "vitest";
import {
  attachmentKind,
  classifyMessage,
  groupSettingsKey,
  safeFileName,
  stripBotMention,
  type BotIdentity,
  type DiscordMessageView,
} from "../../daemon/adapters/discord/inbound.js";
import { discordChannelSchema } from "../../daemon/adapters/discord/config.js";

const bot: BotIdentity = { id: "900", name: "relay", roleIds: ["555"] };

const view = (overrides: Partial<DiscordMessageView> = {}): DiscordMessageView => ({
  id: "1",
  channelId: "10",
  guildId: "20",
  parentChannelId: null,
  authorId: "30",
  authorIsBot: false,
  authorName: "alice",
  isSystem: false,
  fromWebhook: false,
  content: "hello",
  createdTimestamp: 0,
  mentionedUserIds: [],
  mentionedRoleIds: [],
  repliedUserId: null,
  attachments: [],
  ...overrides,
});

const config = (extra: Record<string, unknown> = {}) => discordChannelSchema.parse({ type: "discord", token: "t", access: { mode: "open" }, ...extra });

describe("stripBotMention", () => {
  it("removes leading mentions in every form, with the punctuation after them", () => {
    expect(stripBotMention("<@900> hi", bot)).toBe("hi");
    expect(stripBotMention("  <@!900>: hi", bot)).toBe("hi");
    expect(stripBotMention("<@&555>, <@900> hi", bot)).toBe("hi");
    expect(stripBotMention("<@900>", bot)).toBe("");
  });

  it("keeps a mention inside the sentence readable and leaves other people's mentions alone", () => {
    expect(stripBotMention("ask <@900> and <@31>", bot)).toBe("ask @relay and <@31>");
    expect(stripBotMention("<@31> <@900> hi", bot)).toBe("<@31> @relay hi");
  });
});

describe("classifyMessage", () => {
  it("says whether a guild message mentions the bot (the core applies the rule); DMs carry no flag", () => {
    expect(classifyMessage(view(), bot)).toEqual({ kind: "accept", chatType: "group", text: "hello", mentioned: false });
    expect(classifyMessage(view({ guildId: null }), bot)).toEqual({ kind: "accept", chatType: "direct", text: "hello" });
    expect(classifyMessage(view({ content: "<@900> hello", mentionedUserIds: ["900"] }), bot)).toEqual({
      kind: "accept",
      chatType: "group",
      text: "hello",
      mentioned: true,
    });
  });

  it("lets a thread inherit its parent channel's setting, and a channel override its guild's", () => {
    const cfg = config({ access: { mode: "open", groups: { "20": { requireMention: false }, "11": { requireMention: true } } } });
    expect(groupSettingsKey(cfg, view({ channelId: "99", parentChannelId: "11" }))).toBe("11");
  });

  it("drops a bare mention with nothing to say, but not one with a file", () => {
    const bare = view({ content: "<@900>", mentionedUserIds: ["900"] });
    expect(classifyMessage(bare, bot)).toEqual({ kind: "ignore", reason: "empty" });
    const withFile = { ...bare, attachments: [{ id: "5", name: "a.txt", url: "http://x/a.txt", size: 1, contentType: "text/plain" }] };
    expect(classifyMessage(withFile, bot)).toEqual({ kind: "accept", chatType: "group", text: "", mentioned: true });
  });

  it("ignores webhooks and system messages", () => {
    expect(classifyMessage(view({ guildId: null, fromWebhook: true }), bot)).toMatchObject({ reason: "webhook" });
    expect(classifyMessage(view({ guildId: null, isSystem: true }), bot)).toMatchObject({ reason: "system message" });
  });
});

describe("attachments", () => {
  it("names files safely", () => {
    expect(safeFileName("..\\..\\windows\\evil.exe", "1")).toBe("evil.exe");
    expect(safeFileName("../.hidden", "1")).toBe("hidden");
    expect(safeFileName("a\u0000b\u001f.txt", "1")).toBe("ab.txt");
    expect(safeFileName(null, "42")).toBe("attachment-42");
    expect(safeFileName("..", "42")).toBe("attachment-42");
  });

  it("maps content types to kinds", () => {
    expect(["image/png", "audio/ogg", "video/mp4", "application/pdf", "text/plain", null].map(attachmentKind)).toEqual([
      "photo",
      "audio",
      "video",
      "document",
      "document",
      "other",
    ]);
  });
});
