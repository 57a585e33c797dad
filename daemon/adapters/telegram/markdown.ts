/**
 * Markdown (what agents write) to the HTML subset Telegram renders: b, i, s,
 * code, pre, a, blockquote. Everything else becomes text. Parsed with marked's
 * lexer so nesting and escapes follow CommonMark.
 */
import { Lexer, type Token, type Tokens } from "marked";

const escapeHtml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (s: string): string => escapeHtml(s).replace(/"/g, "&quot;");
/** marked hands some text over with entities already in it: undo them before escaping once. */
const decodeEntities = (s: string): string =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e] ?? _);
const text = (s: string): string => escapeHtml(decodeEntities(s));

function inline(tokens: Token[] | undefined): string {
  let out = "";
  for (const token of tokens ?? []) {
    switch (token.type) {
      case "strong":
        out += `<b>${inline((token as Tokens.Strong).tokens)}</b>`;
        break;
      case "em":
        out += `<i>${inline((token as Tokens.Em).tokens)}</i>`;
        break;
      case "del":
        out += `<s>${inline((token as Tokens.Del).tokens)}</s>`;
        break;
      case "codespan":
        // Code is literal: `&amp;` there means those five characters.
        out += `<code>${escapeHtml((token as Tokens.Codespan).text)}</code>`;
        break;
      case "link": {
        const link = token as Tokens.Link;
        out += /^(https?|tg|mailto):/i.test(link.href) ? `<a href="${escapeAttr(link.href)}">${inline(link.tokens)}</a>` : inline(link.tokens);
        break;
      }
      case "br":
        out += "\n";
        break;
      case "text": {
        const t = token as Tokens.Text;
        out += t.tokens ? inline(t.tokens) : text(t.text);
        break;
      }
      case "image": {
        // Telegram cannot inline an image in text: keep it reachable as a link.
        const image = token as Tokens.Image;
        const label = text(image.text || image.href);
        out += /^https?:/i.test(image.href) ? `<a href="${escapeAttr(image.href)}">${label}</a>` : label;
        break;
      }
      default:
        out += text("text" in token && typeof token.text === "string" ? token.text : token.raw);
    }
  }
  return out;
}

function block(tokens: Token[], depth = 0): string {
  let out = "";
  for (const token of tokens) {
    switch (token.type) {
      case "space":
        break;
      case "paragraph":
        out += `${inline((token as Tokens.Paragraph).tokens)}\n\n`;
        break;
      case "heading":
        out += `<b>${inline((token as Tokens.Heading).tokens)}</b>\n\n`;
        break;
      case "code": {
        const code = token as Tokens.Code;
        const lang = code.lang?.split(/\s/)[0];
        out +=
          lang && /^[\w+#.-]+$/.test(lang)
            ? `<pre><code class="language-${lang}">${escapeHtml(code.text)}</code></pre>\n\n`
            : `<pre>${escapeHtml(code.text)}</pre>\n\n`;
        break;
      }
      case "blockquote":
        out += `<blockquote>${block((token as Tokens.Blockquote).tokens, depth).trim()}</blockquote>\n\n`;
        break;
      case "list": {
        const list = token as Tokens.List;
        const start = typeof list.start === "number" ? list.start : 1;
        // Nested lists are indented, so their items read as part of the outer one.
        const indent = "   ".repeat(depth);
        list.items.forEach((item, i) => {
          out += `${indent}${list.ordered ? `${start + i}.` : "•"} ${block(item.tokens, depth + 1).trim()}\n`;
        });
        out += "\n";
        break;
      }
      case "hr":
        out += "———\n\n";
        break;
      case "checkbox":
        out += (token as Tokens.Checkbox).checked ? "☑ " : "☐ ";
        break;
      case "table":
        // No tables in Telegram: the source keeps its columns in a fixed-width block.
        out += `<pre>${escapeHtml(token.raw.trim())}</pre>\n\n`;
        break;
      case "text": {
        const t = token as Tokens.Text;
        out += `${t.tokens ? inline(t.tokens) : text(t.text)}\n`;
        break;
      }
      default:
        out += `${escapeHtml(token.raw.trim())}\n\n`;
    }
  }
  return out;
}

export function telegramMarkdownToHtml(markdown: string): string {
  return block(new Lexer({ gfm: true }).lex(markdown)).trim();
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
