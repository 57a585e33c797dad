/** Mattermost posts as InboundMessages (inbound.ts, pure): what is taken, how a mention is read and stripped. */
import { describe, expect, it } from "vitest";
import { type MattermostPost, postSchema, translateMessage } from "../../daemon/adapters/mattermost/inbound.js";

const bot = { id: "botid", username: "agent.bot" };
const ctx = { bot, accountId: "mm" };
const post = (fields: Partial<MattermostPost>): MattermostPost =>
  postSchema.parse({ id: "p1", create_at: 1000, user_id: "alice", channel_id: "c1", message: "", ...fields });
const open = { type: "O", teamId: "team1" };

describe("translateMessage", () => {
  it("reads a mention by name (the server's mentions list or the text) and strips the leading one", () => {
    expect(translateMessage({ post: post({ message: "@agent.bot what now?" }), channel: open }, ctx)).toMatchObject({ mentioned: true, text: "what now?" });
    expect(translateMessage({ post: post({ message: "hi @Agent.Bot, see this" }), channel: open }, ctx)).toMatchObject({
      mentioned: true,
      text: "hi @Agent.Bot, see this",
    });
    expect(translateMessage({ post: post({ message: "ask me" }), channel: open, mentions: ["botid"] }, ctx)).toMatchObject({ mentioned: true });
    // A longer name that starts with the bot's is someone else.
    expect(translateMessage({ post: post({ message: "@agent.bot2 hello" }), channel: open }, ctx)).toMatchObject({ mentioned: false });
    expect(translateMessage({ post: post({ message: "email agent.bot@example.com" }), channel: open }, ctx)).toMatchObject({ mentioned: false });
  });

  it("a direct channel is a direct chat with no mention rule; a group message is a group", () => {
    const direct = translateMessage({ post: post({ message: "@agent.bot hi" }), channel: { type: "D", teamId: "" } }, ctx);
    expect(direct).toMatchObject({ chatType: "direct", text: "@agent.bot hi" });
    expect(direct?.mentioned).toBeUndefined();
    expect(direct?.groupAliases).toBeUndefined();
    expect(translateMessage({ post: post({}), channel: { type: "G", teamId: "" } }, ctx)).toMatchObject({ chatType: "group" });
  });

  it("a post in a thread names it; a root post has no thread", () => {
    expect(translateMessage({ post: post({ root_id: "r1" }), channel: open }, ctx)?.threadId).toBe("r1");
    expect(translateMessage({ post: post({}), channel: open }, ctx)?.threadId).toBeUndefined();
  });

  it("takes nothing of its own, of the server's, of other bots and webhooks, or deleted", () => {
    const ignored: string[] = [];
    const quiet = { ...ctx, onIgnored: (r: string) => void ignored.push(r) };
    expect(translateMessage({ post: post({ user_id: "botid" }), channel: open }, quiet)).toBeUndefined();
    expect(translateMessage({ post: post({ type: "system_join_channel" }), channel: open }, quiet)).toBeUndefined();
    expect(translateMessage({ post: post({ props: { from_webhook: "true" } }), channel: open }, quiet)).toBeUndefined();
    expect(translateMessage({ post: post({ delete_at: 5 }), channel: open }, quiet)).toBeUndefined();
    expect(ignored).toHaveLength(4);
  });
});
