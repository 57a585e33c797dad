/**
 * Markdown (what agents write) to Slack's `mrkdwn`: *bold*, _italic_,
 * ~strike~, `code`, ``` blocks, <url|label> links, "•" lists, "&gt;" quotes.
 * `&`, `<` and `>` are escaped everywhere (Slack reads them as control
 * characters), so agent text can never produce a mention or a link it did
 * not write as one. Parsed with marked's lexer, as Telegram's HTML is, so
 * nesting and escapes follow CommonMark. Pure.
 */
import { Lexer, type Token, type Tokens } from "marked";

/** Slack's three control characters, as its docs say to escape them. */
export const escapeMrkdwn = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
/** marked hands some text over with entities already in it: undo them before escaping once. */
const decodeEntities = (s: string): string =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e] ?? _);
const text = (s: string): string => escapeMrkdwn(decodeEntities(s));
/** Inside a link's `<url|label>` a `|` or `>` would end the part early. */
const linkPart = (s: string): string => escapeMrkdwn(s).replace(/\|/g, "¦");

/** Wraps `inner` in a mrkdwn marker, keeping surrounding spaces outside it (Slack ignores `* x*`). */
function mark(marker: string, inner: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner);
  if (!m?.[2]) return inner;
  return `${m[1]}${marker}${m[2]}${marker}${m[3]}`;
}

function inline(tokens: Token[] | undefined): string {
  let out = "";
  for (const token of tokens ?? []) {
    switch (token.type) {
      case "strong":
        out += mark("*", inline((token as Tokens.Strong).tokens));
        break;
      case "em":
        out += mark("_", inline((token as Tokens.Em).tokens));
        break;
      case "del":
        out += mark("~", inline((token as Tokens.Del).tokens));
        break;
      case "codespan":
        out += `\`${escapeMrkdwn(decodeEntities((token as Tokens.Codespan).text))}\``;
        break;
      case "link": {
        const link = token as Tokens.Link;
        const label = inline(link.tokens);
        if (!/^(https?|mailto):/i.test(link.href)) out += label;
        else if (decodeEntities(link.text) === link.href) out += `<${linkPart(link.href)}>`;
        else out += `<${linkPart(link.href)}|${label.replace(/\|/g, "¦")}>`;
        break;
      }
      case "image": {
        // No inline images in text: keep the picture reachable as a link.
        const image = token as Tokens.Image;
        out += /^https?:/i.test(image.href) ? `<${linkPart(image.href)}|${linkPart(image.text || image.href)}>` : text(image.text || image.href);
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
        out += `${mark("*", inline((token as Tokens.Heading).tokens))}\n\n`;
        break;
      case "code":
        out += `\`\`\`\n${escapeMrkdwn((token as Tokens.Code).text)}\n\`\`\`\n\n`;
        break;
      case "blockquote": {
        const inner = block((token as Tokens.Blockquote).tokens, depth).trim();
        out += `${inner
          .split("\n")
          .map((line) => `> ${line}`)
          .join("\n")}\n\n`;
        break;
      }
      case "list": {
        const list = token as Tokens.List;
        const start = typeof list.start === "number" ? list.start : 1;
        const indent = "    ".repeat(depth);
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
        // No tables in mrkdwn: the source keeps its columns in a fixed-width block.
        out += `\`\`\`\n${escapeMrkdwn(token.raw.trim())}\n\`\`\`\n\n`;
        break;
      case "text": {
        const t = token as Tokens.Text;
        out += `${t.tokens ? inline(t.tokens) : text(t.text)}\n`;
        break;
      }
      default:
        out += `${escapeMrkdwn(token.raw.trim())}\n\n`;
    }
  }
  return out;
}

/** The agent's Markdown as Slack `mrkdwn`. */
export function markdownToMrkdwn(markdown: string): string {
  return block(new Lexer({ gfm: true }).lex(markdown)).trim();
}

/** Plain text as Slack shows it verbatim: only the control characters escaped. */
export const plainToMrkdwn = escapeMrkdwn;
