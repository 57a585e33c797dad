/**
 * Markdown (what agents write) to the HTML subset Matrix clients render in `formatted_body`
 * (`org.matrix.custom.html`: the spec's list of tags). The walker is the daemon's one
 * (daemon/helpers/markdown.ts); this is Matrix's table. Agent text never becomes markup it did
 * not write: everything else is escaped.
 */
import { decodeEntities, type MarkdownStyle, renderMarkdown } from "../../helpers/markdown.js";

const escapeHtml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (s: string): string => escapeHtml(s).replace(/"/g, "&quot;");

const matrixHtml: MarkdownStyle = {
  escape: escapeHtml,
  strong: (inner) => `<strong>${inner}</strong>`,
  em: (inner) => `<em>${inner}</em>`,
  del: (inner) => `<del>${inner}</del>`,
  codespan: (code) => `<code>${escapeHtml(code)}</code>`,
  // The spec lets clients show links with these schemes only.
  link: (href, label) => (/^(https?|ftp|mailto|magnet):/i.test(href) ? `<a href="${escapeAttr(href)}">${label}</a>` : label),
  image: (href, alt) => {
    const label = escapeHtml(decodeEntities(alt || href));
    return /^https?:/i.test(href) ? `<a href="${escapeAttr(href)}">${label}</a>` : label;
  },
  heading: (inner) => `<strong>${inner}</strong>`,
  code: (code, lang) => (lang ? `<pre><code class="language-${lang}">${escapeHtml(code)}</code></pre>` : `<pre><code>${escapeHtml(code)}</code></pre>`),
  quote: (inner) => `<blockquote>${inner}</blockquote>`,
  table: (source) => `<pre><code>${escapeHtml(source)}</code></pre>`,
  listIndent: "   ",
};

/** The message's `formatted_body`: HTML with line breaks as `<br>`. */
export function matrixMarkdownToHtml(markdown: string): string {
  const html = renderMarkdown(markdown, matrixHtml);
  // Line breaks outside <pre> are not shown by HTML: keep the agent's lines.
  return html
    .split(/(<pre>[\s\S]*?<\/pre>)/)
    .map((part) => (part.startsWith("<pre>") ? part : part.replace(/\n/g, "<br>")))
    .join("");
}
