/**
 * Splits a long reply into messages a platform accepts. Breaks at the
 * strongest boundary available (paragraph, then line, then word; a hard cut
 * only inside a word longer than the room), and never leaves a fenced code
 * block open: a chunk that ends inside one is closed with its marker, and the
 * next chunk reopens it with the same info string (```ts). Those markers count
 * against the limit. Lengths are UTF-16 code units, which is what the
 * platforms count (or more than they count), and surrogate pairs stay whole.
 */

interface Fence {
  /** Start of the opening line (indentation included). */
  open: number;
  /** End of the opening line's text (its "\n", or the end). */
  openEnd: number;
  contentStart: number;
  /** Start of the closing line; the text's end when never closed. */
  closeStart: number;
  /** End of the closing marker; the text's end when never closed. */
  closeEnd: number;
  /** Line that reopens the block in the next chunk. */
  reopen: string;
  /** Marker that closes it. */
  close: string;
  /** Markers would not fit a tiny limit: treat the block as plain text. */
  ignored: boolean;
}

type BreakKind = "paragraph" | "newline" | "word" | "hard";

const OPENER = /^[ \t]*(`{3,}|~{3,})(.*)$/;
const CLOSER = /^[ \t]*(`{3,}|~{3,})[ \t]*$/;

/** Fenced blocks as CommonMark sees them (any indentation, for list items). */
function findFences(src: string, limit: number): Fence[] {
  const n = src.length;
  const fences: Fence[] = [];
  let current: { open: number; openEnd: number; marker: string; line: string } | undefined;
  const add = (closeStart: number, closeEnd: number) => {
    if (!current) return;
    const { open, openEnd, marker, line } = current;
    let reopen = line.trim();
    // Reopening must leave at least half of each chunk for content.
    const overhead = (r: string) => r.length + 1 + 1 + marker.length;
    if (overhead(reopen) > limit / 2) reopen = marker;
    // An opening line that cannot share a chunk with its closer cannot be kept whole.
    const ignored = overhead(reopen) > limit / 2 || overhead(line.trim()) > limit;
    fences.push({ open, openEnd, contentStart: Math.min(n, openEnd + 1), closeStart, closeEnd, reopen, close: marker, ignored });
    current = undefined;
  };
  for (let lineStart = 0; ; ) {
    const nl = src.indexOf("\n", lineStart);
    const lineEnd = nl === -1 ? n : nl;
    const line = src.slice(lineStart, lineEnd);
    if (!current) {
      const m = OPENER.exec(line);
      const marker = m?.[1];
      // A backtick fence's info string cannot hold backticks (that is inline code).
      if (marker && !(marker.startsWith("`") && (m[2] ?? "").includes("`"))) {
        current = { open: lineStart, openEnd: lineEnd, marker, line };
      }
    } else {
      const m = CLOSER.exec(line);
      const marker = m?.[1];
      if (marker && marker[0] === current.marker[0] && marker.length >= current.marker.length) {
        add(lineStart, lineStart + line.trimEnd().length);
      }
    }
    if (nl === -1) break;
    lineStart = nl + 1;
  }
  add(n, n);
  return fences;
}

const isBlank = (c: string | undefined) => c === " " || c === "\t";

/**
 * Splits `text` into chunks of at most `limit` characters, and, when the
 * platform counts differently (`measure`: Telegram counts the visible text
 * after rendering), splits any chunk that measures over the limit again,
 * smaller, until every one fits both ways. Raw length stays within the limit
 * too, so a chunk the platform refuses to render can still go as plain text.
 */
export function splitReply(text: string, limit: number, measure?: (chunk: string) => number): string[] {
  const chunks = placeChunks(text, limit).map((c) => c.text);
  if (!measure) return chunks;
  const out: string[] = [];
  const fitChunk = (chunk: string, room: number, depth: number) => {
    const size = measure(chunk);
    if (size <= limit || room <= 1 || depth > 20) {
      out.push(chunk);
      return;
    }
    // Shrink in proportion to the overshoot, with a margin, and try again.
    const smaller = Math.max(1, Math.min(room - 1, Math.floor((room * limit) / size) - 8));
    for (const piece of placeChunks(chunk, smaller).map((c) => c.text)) fitChunk(piece, smaller, depth + 1);
  };
  for (const chunk of chunks) fitChunk(chunk, Math.min(limit, chunk.length), 0);
  return out;
}

/** A chunk of `splitReply`, with where it came from. */
export interface PlacedChunk {
  text: string;
  /** Where its content starts in the text (after `\r\n` became `\n`, which keeps lengths up to a trailing `\r`). */
  start: number;
  /** The fence reopening it starts with (`"\`\`\`ts\n"`), or `""`. */
  prefix: string;
}

/**
 * `splitReply`, saying where each chunk starts in the text: so a reply still
 * being written can finish a message at a clean boundary and continue the
 * next one from `prefix + text.slice(start)` as more text arrives.
 */
export function placeChunks(text: string, limit: number): PlacedChunk[] {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive integer");
  const src = text.replace(/\r\n?/g, "\n");
  const n = src.length;
  const fences = findFences(src, limit).filter((f) => !f.ignored);

  /** The fence whose content holds `pos` (a chunk starting there reopens it). */
  const fenceContaining = (pos: number): Fence | undefined => {
    const f = lastFenceOpenedBefore(fences, pos);
    return f && f.contentStart <= pos && pos < f.closeStart ? f : undefined;
  };
  /** The fence a chunk ending at `end` (exclusive) ends within or exactly after. */
  const fenceEndingIn = (end: number): Fence | undefined => {
    const f = lastFenceOpenedBefore(fences, end);
    return f && end <= f.closeEnd ? f : undefined;
  };

  // Precomputed once, so whitespace runs of any length cost O(1) per lookup.
  /** endTrim[e]: `e` moved back over whitespace. */
  const endTrim = new Int32Array(n + 1);
  for (let e = 1; e <= n; e++) endTrim[e] = /\s/.test(src[e - 1] ?? "") ? endTrim[e - 1]! : e;
  /** pastBlanks[i]: first index at or after `i` that is not a space or tab. */
  const pastBlanks = new Int32Array(n + 1);
  pastBlanks[n] = n;
  for (let i = n - 1; i >= 0; i--) pastBlanks[i] = isBlank(src[i]) ? pastBlanks[i + 1]! : i;
  /** contentLine[i], for a line start `i`: the first line from there that is not whitespace-only. */
  const contentLine = new Int32Array(n + 1);
  contentLine[n] = n;
  for (let i = n - 1; i >= 0; i--) {
    if (i > 0 && src[i - 1] !== "\n") continue;
    const j = pastBlanks[i]!;
    contentLine[i] = j >= n ? n : src[j] === "\n" ? contentLine[j + 1]! : i;
  }

  /** From a line start, past any whitespace-only lines; keeps indentation. */
  const skipBlankLines = (lineStart: number): number => contentLine[lineStart]!;
  /** Where the next chunk starts after a break at `e`: the separator is dropped. */
  const nextStart = (e: number): number => {
    const i = pastBlanks[e]!;
    return i < n && src[i] === "\n" ? skipBlankLines(i + 1) : i;
  };
  const trimEnd = (from: number, end: number): number => Math.max(from, endTrim[end]!);
  const isBreak = (kind: BreakKind, e: number): boolean => {
    switch (kind) {
      case "paragraph": {
        if (src[e] !== "\n") return false;
        const j = pastBlanks[e + 1]!;
        return j >= n || src[j] === "\n";
      }
      case "newline":
        return src[e] === "\n";
      case "word":
        return isBlank(src[e]);
      case "hard": {
        const prev = src.charCodeAt(e - 1);
        const next = src.charCodeAt(e);
        return !(prev >= 0xd800 && prev <= 0xdbff && next >= 0xdc00 && next <= 0xdfff);
      }
    }
  };

  interface Cut {
    end: number;
    suffix: string;
    next: number;
  }
  /** A chunk from `s` (after `prefixLen` of reopening) to a break at `e`, if it is allowed and fits. */
  const evaluate = (s: number, prefixLen: number, e: number): Cut | undefined => {
    const end = trimEnd(s, e);
    if (end <= s) return undefined;
    const next = nextStart(e);
    let suffix = "";
    const f = fenceEndingIn(end);
    if (f) {
      if (end <= f.openEnd) return undefined; // would end on a bare opening line
      if (end > f.closeStart && end < f.closeEnd) return undefined; // inside the closing marker
      if (end < f.closeStart) {
        suffix = `\n${f.close}`;
        // The next chunk would begin with this block's closing line, unopened.
        if (next >= f.closeStart) return undefined;
      }
    }
    if (prefixLen + (end - s) + suffix.length > limit) return undefined;
    return { end, suffix, next };
  };

  const chunks: PlacedChunk[] = [];
  let s = skipBlankLines(0);
  while (s < n) {
    const open = fenceContaining(s);
    const prefix = open ? `${open.reopen}\n` : "";
    const restEnd = trimEnd(s, n);
    if (restEnd <= s) break;
    if (prefix.length + (restEnd - s) <= limit) {
      chunks.push({ text: prefix + src.slice(s, restEnd), start: s, prefix });
      break;
    }
    const room = limit - prefix.length;
    const maxE = Math.min(n - 1, s + room);
    const minFill = Math.floor(room / 2);
    // The strongest break that still fills half a chunk; else the strongest at all.
    const passes: [BreakKind, number][] = [
      ["paragraph", minFill],
      ["newline", minFill],
      ["paragraph", 1],
      ["newline", 1],
      ["word", 1],
      ["hard", 1],
    ];
    let cut: Cut | undefined;
    for (const [kind, fill] of passes) {
      for (let e = maxE; e >= s + fill && !cut; e--) {
        if (isBreak(kind, e)) cut = evaluate(s, prefix.length, e);
      }
      if (cut) break;
    }
    if (!cut) {
      // Only for pathological text (say, thousands of blanks inside a block):
      // cut raw, still closing a block left open, and drop blank pieces.
      let e = Math.min(n, s + Math.max(1, room));
      const f = fenceEndingIn(e);
      const suffix = f && e < f.closeStart ? `\n${f.close}` : "";
      e = Math.max(s + 1, e - suffix.length);
      if (e < n && e - 1 > s && !isBreak("hard", e)) e--;
      if (src.slice(s, e).trim() === "") {
        s = e;
        continue;
      }
      cut = { end: e, suffix, next: e };
    }
    chunks.push({ text: prefix + src.slice(s, cut.end) + cut.suffix, start: s, prefix });
    s = cut.next;
  }
  return chunks;
}

/**
 * `text` with its last fenced code block closed when the text ends inside it:
 * how a reply still being written is shown without an unterminated block.
 */
export function closeOpenFence(text: string): string {
  const src = text.replace(/\r\n?/g, "\n");
  const last = findFences(src, Number.MAX_SAFE_INTEGER).at(-1);
  if (!last || last.closeStart < src.length || last.closeEnd > last.closeStart) return text;
  return `${src.trimEnd()}\n${last.close}`;
}

/** Binary search: the last fence whose opening line starts before `pos`. */
function lastFenceOpenedBefore(fences: readonly Fence[], pos: number): Fence | undefined {
  let lo = 0;
  let hi = fences.length - 1;
  let found: Fence | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const f = fences[mid];
    if (f && f.open < pos) {
      found = f;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
