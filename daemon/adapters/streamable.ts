/**
 * What the platforms with native streams (Slack's `appendStream`, Teams'
 * streaming protocol) share: a stream only grows, so what goes into it must
 * be the agent's own text.
 */

/**
 * What of a preview may go into a stream: while a code block is still open
 * the core shows the preview with a closing fence of its own, which is not
 * the agent's text yet (appended, it would end the block for good). Pure.
 */
export function streamablePart(preview: string): string {
  const closing = /\n(`{3,}|~{3,})$/.exec(preview);
  if (!closing) return preview;
  const before = preview.slice(0, closing.index);
  // An odd number of fence lines before it: a block is open, and this last fence is the core's.
  const fences = before.split("\n").filter((line) => /^ {0,3}(`{3,}|~{3,})/.test(line)).length;
  return fences % 2 === 1 ? before : preview;
}
