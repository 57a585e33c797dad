/**
 * Markdown (what agents write) to Slack's `mrkdwn`: *bold*, _italic_,
 * ~strike~, `code`, ``` blocks, <url|label> links, "•" lists, "&gt;" quotes.
 * `&`, `<` and `>` are escaped everywhere (Slack reads them as control
 * characters), so agent text can never produce a mention or a link it did
 * not write as one. The walker is the daemon's one (daemon/helpers/markdown.ts);
 * this is Slack's table. Pure.
 */
import { decodeEntities, type MarkdownStyle, renderMarkdown } from "../../helpers/markdown.js";

/** Slack's three control characters, as its docs say to escape them. */
export const escapeMrkdwn = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
/** Inside a link's `<url|label>` a `|` or `>` would end the part early. */
const linkPart = (s: string): string => escapeMrkdwn(s).replace(/\|/g, "¦");

/** Wraps `inner` in a mrkdwn marker, keeping surrounding spaces outside it (Slack ignores `* x*`). */
function mark(marker: string, inner: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner);
  if (!m?.[2]) return inner;
  return `${m[1]}${marker}${m[2]}${marker}${m[3]}`;
}

const mrkdwn: MarkdownStyle = {
  escape: escapeMrkdwn,
  strong: (inner) => mark("*", inner),
  em: (inner) => mark("_", inner),
  del: (inner) => mark("~", inner),
  codespan: (code) => `\`${escapeMrkdwn(decodeEntities(code))}\``,
  link: (href, label, autolink) => {
    if (!/^(https?|mailto):/i.test(href)) return label;
    return autolink ? `<${linkPart(href)}>` : `<${linkPart(href)}|${label.replace(/\|/g, "¦")}>`;
  },
  // No inline images in text: keep the picture reachable as a link.
  image: (href, alt) => (/^https?:/i.test(href) ? `<${linkPart(href)}|${linkPart(alt || href)}>` : escapeMrkdwn(decodeEntities(alt || href))),
  heading: (inner) => mark("*", inner),
  code: (code) => `\`\`\`\n${escapeMrkdwn(code)}\n\`\`\``,
  quote: (inner) =>
    inner
      .split("\n")
      .map((line) => `> ${line}`)
      .join("\n"),
  // No tables in mrkdwn: the source keeps its columns in a fixed-width block.
  table: (source) => `\`\`\`\n${escapeMrkdwn(source)}\n\`\`\``,
  listIndent: "    ",
};

/** The agent's Markdown as Slack `mrkdwn`. */
export function markdownToMrkdwn(markdown: string): string {
  return renderMarkdown(markdown, mrkdwn);
}

/** Plain text as Slack shows it verbatim: only the control characters escaped. */
export const plainToMrkdwn = escapeMrkdwn;
