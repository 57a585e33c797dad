import { describe, expect, it } from "vitest";
import { composeReply, replyWithFiles } from "../../../daemon/core/turn.js";
import { extractReplyFiles, fileKindOf, isWorkspacePath, MAX_REPLY_FILES } from "../../../daemon/core/reply-files.js";

describe("extractReplyFiles", () => {
  it("takes MEDIA lines, Markdown images and links to workspace paths out of the text, in order, each once", () => {
    const reply = [
      "Here is the chart: ![sales chart](workspace/chart.png)",
      "and [the full report](workspace/report.pdf).",
      "MEDIA: workspace/chart.png",
      "MEDIA: workspace/voice.ogg",
    ].join("\n");
    expect(extractReplyFiles(reply)).toEqual({
      text: "Here is the chart: sales chart\nand the full report.",
      files: ["workspace/chart.png", "workspace/report.pdf", "workspace/voice.ogg"],
    });
  });

  it("leaves URLs, paths outside the workspace and code blocks alone", () => {
    const reply = [
      "[docs](https://example.com/a.pdf) [mail](mailto:a@b.c) [up](../secret.txt) [abs](/etc/passwd) [anchor](#top)",
      "MEDIA: ../../etc/passwd",
      "```",
      "MEDIA: workspace/in-code.png",
      "```",
    ].join("\n");
    expect(extractReplyFiles(reply)).toEqual({ text: reply, files: [] });
  });

  it("sends at most MAX_REPLY_FILES files; the rest stay named in the text", () => {
    const lines = Array.from({ length: MAX_REPLY_FILES + 2 }, (_, i) => `MEDIA: f${i}.txt`);
    const { text, files } = extractReplyFiles(lines.join("\n"));
    expect(files).toHaveLength(MAX_REPLY_FILES);
    expect(text).toBe(lines.slice(MAX_REPLY_FILES).join("\n"));
  });
});

describe("isWorkspacePath", () => {
  it("accepts relative paths in the tree and nothing else", () => {
    for (const ok of ["a.png", "workspace/a b.pdf", "out/2026/r.csv"]) expect(isWorkspacePath(ok)).toBe(true);
    for (const bad of ["", "/a", "../a", "a/../b", "./a", "a//b", "http://x/a", "C:\\a", "a\\b", "#x"]) expect(isWorkspacePath(bad)).toBe(false);
  });
});

describe("fileKindOf", () => {
  it("sends images as photos, audio as voice notes, the rest as documents", () => {
    expect(fileKindOf("a/b.PNG")).toEqual({ kind: "photo", mimeType: "image/png" });
    expect(fileKindOf("v.ogg")).toEqual({ kind: "voice", mimeType: "audio/ogg" });
    expect(fileKindOf("r.pdf")).toEqual({ kind: "document", mimeType: "application/pdf" });
    expect(fileKindOf("x.bin")).toEqual({ kind: "document", mimeType: "application/octet-stream" });
  });
});

describe("replyWithFiles", () => {
  const answer = { text: "Here it is.\nMEDIA: workspace/a.png", contextReset: false };
  it("is the reply without the references, and the files", () => {
    expect(replyWithFiles(answer, [], true)).toEqual({ text: "Here it is.", files: ["workspace/a.png"] });
  });
  it("names the files when the reply was only files", () => {
    expect(replyWithFiles({ text: "MEDIA: workspace/a.png", contextReset: false }, [], true).text).toBe("📎 a.png");
  });
  it("leaves the reply as it is when files are not sent back", () => {
    expect(replyWithFiles(answer, ["note"], false)).toEqual({ text: composeReply(answer, ["note"]), files: [] });
  });
});
