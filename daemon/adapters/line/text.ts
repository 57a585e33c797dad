/**
 * LINE shows text as it is sent (no markup): markdown is rendered to plain
 * text, and a text message holds at most 5,000 characters, up to five
 * message objects per reply or push (developers.line.biz, "Text message",
 * "Send reply message"). Pure.
 */

/** Characters in one text message object. */
export const TEXT_MAX = 5000;
/** Message objects in one reply or push call. */
export const MESSAGES_PER_CALL = 5;

/** Markdown as LINE shows it: emphasis and heading marks dropped, links as "text (url)", code kept as written. */
export function renderLineText(text: string, format: "markdown" | "plain"): string {
  if (format === "plain") return text;
  const parts = text.split(/(```[\s\S]*?```)/);
  return parts
    .map((part, i) =>
      i % 2 === 1
        ? part.replace(/^```[^\n]*\n?/, "").replace(/\n?```$/, "")
        : part
            .replace(/^#{1,6}\s+/gm, "")
            .replace(/\*\*(.+?)\*\*/g, "$1")
            .replace(/__(.+?)__/g, "$1")
            .replace(/(^|[^*])\*(?!\s)([^*\n]+?)\*/g, "$1$2")
            .replace(/`([^`\n]+)`/g, "$1")
            .replace(/\[([^\]\n]+)\]\((https?:[^)\s]+)\)/g, "$1 ($2)"),
    )
    .join("");
}

/** A break is looked for only this near a piece's end, so five pieces always hold `CALL_MAX`. */
const BREAK_WINDOW = 200;
/** What one call carries for certain: the adapter's `maxMessageLength`. */
export const CALL_MAX = (TEXT_MAX - BREAK_WINDOW) * MESSAGES_PER_CALL;

/**
 * Splits rendered text into message objects of at most `max` characters,
 * at a line break or a space where one is near the end. The core's chunker
 * keeps a chunk within `CALL_MAX`, so one chunk is one call.
 */
export function splitForLine(text: string, max = TEXT_MAX): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf("\n", max);
    if (cut < max - BREAK_WINDOW) cut = rest.lastIndexOf(" ", max);
    if (cut < max - BREAK_WINDOW) cut = max;
    // Never cut a surrogate pair in two.
    if (cut === max && /[\uD800-\uDBFF]/.test(rest.charAt(cut - 1))) cut -= 1;
    pieces.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).replace(/^[ \n]/, "");
  }
  if (rest.trim() !== "" || pieces.length === 0) pieces.push(rest);
  return pieces.filter((p, i) => p.trim() !== "" || i === 0);
}
