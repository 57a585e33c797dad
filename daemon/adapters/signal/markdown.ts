/**
 * Markdown as Signal shows it: plain text plus text styles (signal-cli's
 * `textStyle`, "start:length:STYLE" with BOLD, ITALIC, STRIKETHROUGH,
 * MONOSPACE, SPOILER; start and length in UTF-16 code units, as Signal's
 * body ranges count). Pure. Links become "text (url)"; headings bold.
 */
export type SignalStyle = "BOLD" | "ITALIC" | "STRIKETHROUGH" | "MONOSPACE";

export interface StyledText {
  text: string;
  /** signal-cli's `textStyle` values. */
  styles: string[];
}

interface Builder {
  text: string;
  styles: { start: number; length: number; style: SignalStyle }[];
}

const EMPHASIS: readonly [string, SignalStyle][] = [
  ["**", "BOLD"],
  ["__", "BOLD"],
  ["~~", "STRIKETHROUGH"],
  ["*", "ITALIC"],
  ["_", "ITALIC"],
];
const LINK = /^\[([^\]\n]+)\]\(([^)\s]+)\)/;
const isWordChar = (c: string | undefined) => !!c && /[\p{L}\p{N}_]/u.test(c);

function styled(out: Builder, style: SignalStyle, write: () => void): void {
  const start = out.text.length;
  write();
  const length = out.text.length - start;
  if (length > 0) out.styles.push({ start, length, style });
}

/** The closing delimiter of an emphasis opened at `from`, or -1 (no blank right inside it; `_` only between non-word characters). */
function closing(src: string, delim: string, from: number): number {
  const open = from - delim.length;
  if (/\s/.test(src[from] ?? " ")) return -1;
  if (delim[0] === "_" && isWordChar(src[open - 1])) return -1;
  let at = src.indexOf(delim, from + 1);
  while (at !== -1) {
    const inner = src.slice(from, at);
    const ok = !/\s$/.test(inner) && !inner.includes("\n\n") && !(delim[0] === "_" && isWordChar(src[at + delim.length]));
    if (ok) return at;
    at = src.indexOf(delim, at + 1);
  }
  return -1;
}

function inline(src: string, out: Builder): void {
  let i = 0;
  while (i < src.length) {
    if (src[i] === "`") {
      const end = src.indexOf("`", i + 1);
      if (end > i + 1) {
        styled(out, "MONOSPACE", () => {
          out.text += src.slice(i + 1, end);
        });
        i = end + 1;
        continue;
      }
    }
    const link = LINK.exec(src.slice(i));
    if (link) {
      const [whole, label = "", url = ""] = link;
      inline(label, out);
      if (label !== url) out.text += ` (${url})`;
      i += whole.length;
      continue;
    }
    let matched = false;
    for (const [delim, style] of EMPHASIS) {
      if (!src.startsWith(delim, i)) continue;
      const from = i + delim.length;
      const end = closing(src, delim, from);
      if (end === -1) continue;
      styled(out, style, () => inline(src.slice(from, end), out));
      i = end + delim.length;
      matched = true;
      break;
    }
    if (matched) continue;
    out.text += src[i];
    i++;
  }
}

/** Renders `markdown` for Signal: the text to send and its styles. */
export function signalMarkdown(markdown: string): StyledText {
  const out: Builder = { text: "", styles: [] };
  const parts = markdown.split(/(```[^\n]*\n[\s\S]*?```)/g);
  for (const part of parts) {
    const fence = /^```[^\n]*\n([\s\S]*?)\n?```$/.exec(part);
    if (fence) {
      styled(out, "MONOSPACE", () => {
        out.text += fence[1] ?? "";
      });
      continue;
    }
    const lines = part.split("\n");
    lines.forEach((line, n) => {
      const heading = /^#{1,6}\s+(.*)$/.exec(line);
      if (heading) styled(out, "BOLD", () => inline(heading[1] ?? "", out));
      else inline(line, out);
      if (n < lines.length - 1) out.text += "\n";
    });
  }
  return { text: out.text, styles: out.styles.map((s) => `${s.start}:${s.length}:${s.style}`) };
}
