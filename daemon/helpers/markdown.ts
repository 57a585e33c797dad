/**
 * The one walker from Markdown (what agents write) to a platform's own markup. marked's lexer
 * parses (so nesting and escapes follow CommonMark, GFM tables and strikethrough included); a
 * platform says only how each construct looks, in a {@link MarkdownStyle} table
 * (`daemon/adapters/<platform>/markdown.ts`). Constructs a style has no way to show fall back to
 * text, escaped, so agent text can never produce markup it did not write. Pure.
 */
import { Lexer, type Token, type Tokens } from "marked";

/** How one platform shows each construct. `inner` arguments are already rendered (escaped). */
export interface MarkdownStyle {
  /** Escapes literal text for the platform (the characters its markup reads as control). */
  escape(text: string): string;
  strong(inner: string): string;
  em(inner: string): string;
  del(inner: string): string;
  /** Inline code; `code` is marked's text of it (entities may still be in it, as marked leaves them). */
  codespan(code: string): string;
  /** A link: `label` rendered; `autolink` when the text is the address itself (`<https://…>`, a bare URL). */
  link(href: string, label: string, autolink: boolean): string;
  /** An image: platforms cannot inline one in text, so it is shown as a link (or its text). */
  image(href: string, alt: string): string;
  heading(inner: string): string;
  /** A fenced or indented code block; `lang` the info string's first word, when it is a plain name. */
  code(code: string, lang: string | undefined): string;
  /** A block quote of already rendered blocks (trimmed). */
  quote(inner: string): string;
  /** A GFM table, given as its source: most chat platforms have none, so they keep its columns in a fixed-width block. */
  table(source: string): string;
  /** Indentation of a nested list per level. */
  listIndent: string;
}

/** marked hands some text over with entities already in it: undo them before escaping once. */
export const decodeEntities = (s: string): string =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e] ?? _);

/** The agent's Markdown in `style`'s markup. */
export function renderMarkdown(markdown: string, style: MarkdownStyle): string {
  const text = (s: string): string => style.escape(decodeEntities(s));

  const inline = (tokens: Token[] | undefined): string => {
    let out = "";
    for (const token of tokens ?? []) {
      switch (token.type) {
        case "strong":
          out += style.strong(inline((token as Tokens.Strong).tokens));
          break;
        case "em":
          out += style.em(inline((token as Tokens.Em).tokens));
          break;
        case "del":
          out += style.del(inline((token as Tokens.Del).tokens));
          break;
        case "codespan":
          out += style.codespan((token as Tokens.Codespan).text);
          break;
        case "link": {
          const link = token as Tokens.Link;
          out += style.link(link.href, inline(link.tokens), decodeEntities(link.text) === link.href);
          break;
        }
        case "image": {
          const image = token as Tokens.Image;
          out += style.image(image.href, image.text);
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
        default:
          out += text("text" in token && typeof token.text === "string" ? token.text : token.raw);
      }
    }
    return out;
  };

  const block = (tokens: Token[], depth: number): string => {
    let out = "";
    for (const token of tokens) {
      switch (token.type) {
        case "space":
          break;
        case "paragraph":
          out += `${inline((token as Tokens.Paragraph).tokens)}\n\n`;
          break;
        case "heading":
          out += `${style.heading(inline((token as Tokens.Heading).tokens))}\n\n`;
          break;
        case "code": {
          const code = token as Tokens.Code;
          const lang = code.lang?.split(/\s/)[0];
          out += `${style.code(code.text, lang && /^[\w+#.-]+$/.test(lang) ? lang : undefined)}\n\n`;
          break;
        }
        case "blockquote":
          out += `${style.quote(block((token as Tokens.Blockquote).tokens, depth).trim())}\n\n`;
          break;
        case "list": {
          const list = token as Tokens.List;
          const start = typeof list.start === "number" ? list.start : 1;
          // Nested lists are indented, so their items read as part of the outer one.
          const indent = style.listIndent.repeat(depth);
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
          out += `${style.table(token.raw.trim())}\n\n`;
          break;
        case "text": {
          const t = token as Tokens.Text;
          out += `${t.tokens ? inline(t.tokens) : text(t.text)}\n`;
          break;
        }
        default:
          out += `${style.escape(token.raw.trim())}\n\n`;
      }
    }
    return out;
  };

  return block(new Lexer({ gfm: true }).lex(markdown), 0).trim();
}
