/**
 * Replies, edits, files, reactions and typing through the REST API (rest.ts).
 * Mattermost renders Markdown itself, so text goes as it is. A reply into a
 * thread carries the thread's `root_id`; a file is uploaded (POST /files) and
 * then posted by its id.
 */
import { z } from "zod";
import type { ChatTarget, FileLimits, OutboundFile, SendReceipt } from "../../vocabulary/adapter.js";
import { type MattermostRest, networkError, type RestResult, sendErrorOf } from "./rest.js";

/** The server's default post size (PostMessageMaxRunesV2) in runes; the file size is FileSettings.MaxFileSize's default, 100 MB. */
export const MATTERMOST_LIMITS = { maxMessageLength: 16_383, typingRefreshMs: 4_000, minEditIntervalMs: 1_000 } as const;
const MAX_FILE_BYTES = 100 * 1024 * 1024;
export const MATTERMOST_FILE_LIMITS: FileLimits = { photo: MAX_FILE_BYTES, voice: MAX_FILE_BYTES, document: MAX_FILE_BYTES };

/** Mattermost counts runes (code points), not UTF-16 units. */
export const runeLength = (text: string): number => [...text].length;

const PostCreated = z.object({ id: z.string() });
const Uploaded = z.object({ file_infos: z.array(z.object({ id: z.string() })).min(1) });

/**
 * Reactions are named, not Unicode (`emoji_name`); the common ones the
 * acknowledgement may use, by Mattermost's system emoji names. Anything else
 * is taken as a name already ("eyes", or a custom emoji).
 */
const EMOJI_NAMES: Readonly<Record<string, string>> = {
  "👀": "eyes",
  "👍": "+1",
  "👎": "-1",
  "✅": "white_check_mark",
  "✔️": "heavy_check_mark",
  "❌": "x",
  "⏳": "hourglass_flowing_sand",
  "⌛": "hourglass",
  "🤔": "thinking_face",
  "🙏": "pray",
  "🎉": "tada",
  "❤️": "heart",
  "🔥": "fire",
  "💬": "speech_balloon",
  "🚀": "rocket",
  "⚡": "zap",
  "🆗": "ok",
  "✍️": "writing_hand",
};

export const emojiName = (emoji: string): string => EMOJI_NAMES[emoji] ?? emoji.replace(/^:|:$/g, "");

export interface OutboundDeps {
  rest: MattermostRest;
  /** The bot's user id once known (GET /users/me at start); "me" before. */
  botId(): string;
}

export function createMattermostOutbound(deps: OutboundDeps) {
  const { rest } = deps;
  const { client } = rest;

  async function call(what: string, url: string, init: { method: string; body?: string | FormData }): Promise<Extract<RestResult, { ok: true }>> {
    let result: RestResult;
    try {
      result = await rest.call(url, init);
    } catch (error) {
      throw networkError(what, error);
    }
    if (!result.ok) throw sendErrorOf(what, result);
    return result;
  }

  async function createPost(what: string, target: ChatTarget, message: string, fileIds?: string[]): Promise<SendReceipt> {
    const body = { channel_id: target.chatId, message, ...(target.threadId ? { root_id: target.threadId } : {}), ...(fileIds ? { file_ids: fileIds } : {}) };
    const result = await call(what, client.getPostsRoute(), { method: "post", body: JSON.stringify(body) });
    const created = PostCreated.safeParse(result.data);
    return created.success ? { messageId: created.data.id } : {};
  }

  return {
    send: (target: ChatTarget, text: string): Promise<SendReceipt> => createPost("send", target, text),

    async edit(_target: ChatTarget, messageId: string, text: string): Promise<void> {
      await call("edit", `${client.getPostRoute(messageId)}/patch`, { method: "put", body: JSON.stringify({ message: text }) });
    },

    async sendFile(target: ChatTarget, file: OutboundFile): Promise<SendReceipt> {
      const form = new FormData();
      form.append("channel_id", target.chatId);
      form.append("files", new Blob([file.data], { type: file.mimeType }), file.fileName);
      const uploaded = Uploaded.safeParse((await call("file upload", client.getFilesRoute(), { method: "post", body: form })).data);
      if (!uploaded.success) throw networkError("file upload", new Error("the server named no uploaded file"));
      return createPost(
        "file post",
        target,
        "",
        uploaded.data.file_infos.map((f) => f.id),
      );
    },

    async react(_target: ChatTarget, messageId: string, emoji: string, options: { remove: boolean }): Promise<void> {
      const name = emojiName(emoji);
      if (options.remove) {
        await call("reaction removal", `${client.getUserRoute(deps.botId())}/posts/${encodeURIComponent(messageId)}/reactions/${encodeURIComponent(name)}`, {
          method: "delete",
        });
        return;
      }
      await call("reaction", client.getReactionsRoute(), {
        method: "post",
        body: JSON.stringify({ user_id: deps.botId(), post_id: messageId, emoji_name: name }),
      });
    },

    /** Best effort: POST /users/{id}/typing shows "is typing" in the channel (or the thread) for a few seconds. */
    async sendTyping(target: ChatTarget): Promise<void> {
      const body = { channel_id: target.chatId, ...(target.threadId ? { parent_id: target.threadId } : {}) };
      await rest.call(`${client.getUserRoute(deps.botId())}/typing`, { method: "post", body: JSON.stringify(body) }).catch(() => undefined);
    },
  };
}

export type MattermostOutbound = ReturnType<typeof createMattermostOutbound>;
