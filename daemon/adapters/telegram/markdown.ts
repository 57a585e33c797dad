/**
 * Markdown (what agents write) to the HTML subset Telegram renders: b, i, s,
 * code, pre, a, blockquote. Everything else becomes text. The walker is the
 * daemon's one (daemon/helpers/markdown.ts); this is Telegram's table.
 */
import { decodeEntities, type MarkdownStyle, renderMarkdown } from "../../helpers/markdown.js";

const escapeHtml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (s: string): string => escapeHtml(s).replace(/"/g, "&quot;");

const telegramHtml: MarkdownStyle = {
  escape: escapeHtml,
  strong: (inner) => `<b>${inner}</b>`,
  em: (inner) => `<i>${inner}</i>`,
  del: (inner) => `<s>${inner}</s>`,
  // Code is literal: `&amp;` there means those five characters.
  codespan: (code) => `<code>${escapeHtml(code)}</code>`,
  link: (href, label) => (/^(https?|tg|mailto):/i.test(href) ? `<a href="${escapeAttr(href)}">${label}</a>` : label),
  // Telegram cannot inline an image in text: keep it reachable as a link.
  image: (href, alt) => {
    const label = escapeHtml(decodeEntities(alt || href));
    return /^https?:/i.test(href) ? `<a href="${escapeAttr(href)}">${label}</a>` : label;
  },
  heading: (inner) => `<b>${inner}</b>`,
  code: (code, lang) => (lang ? `<pre><code class="language-${lang}">${escapeHtml(code)}</code></pre>` : `<pre>${escapeHtml(code)}</pre>`),
  quote: (inner) => `<blockquote>${inner}</blockquote>`,
  // No tables in Telegram: the source keeps its columns in a fixed-width block.
  table: (source) => `<pre>${escapeHtml(source)}</pre>`,
  listIndent: "   ",
};

export function telegramMarkdownToHtml(markdown: string): string {
  return renderMarkdown(markdown, telegramHtml);
}

/**
 * What Telegram counts against its 4,096 limit for an HTML message: the text
 * left after entity parsing (tags removed, each character reference one
 * character), in UTF-16 code units.
 */
export function telegramVisibleLength(html: string): number {
  let n = 0;
  for (const m of html.matchAll(/<[^>]*>|&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);|[^<&]+|[<&]/g)) {
    const token = m[0];
    if (token.startsWith("<") && token.length > 1) continue;
    if (token.startsWith("&") && token.length > 1) {
      const code = /^&#x([0-9a-f]+);$/i.exec(token)?.[1] ?? undefined;
      const dec = /^&#(\d+);$/.exec(token)?.[1];
      const cp = code !== undefined ? parseInt(code, 16) : dec !== undefined ? Number(dec) : 0;
      n += cp > 0xffff ? 2 : 1;
      continue;
    }
    n += token.length;
  }
  return n;
}
