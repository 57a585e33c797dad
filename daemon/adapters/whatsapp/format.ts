/**
 * Markdown to WhatsApp's own markup (*bold*, _italic_, ~strike~, ```mono```).
 * Code spans and blocks pass through untouched. The result is never longer
 * than the input, so the core's chunking by `maxMessageLength` still holds.
 */
export function markdownToWhatsApp(markdown: string): string {
  // Split out fenced blocks and inline code so their contents stay verbatim.
  const parts = markdown.split(/(```[\s\S]*?```|`[^`\n]+`)/g);
  return parts.map((part, i) => (i % 2 === 1 ? part : convertProse(part))).join("");
}

function convertProse(text: string): string {
  return (
    text
      .replace(/^([ \t]*)[*+][ \t]+/gm, "$1- ")
      // Single-star emphasis is italic in Markdown but bold in WhatsApp.
      .replace(/(?<![*\w])\*(?![\s*])([^*\n]*?[^\s*])\*(?![*\w])/g, "_$1_")
      .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "*$1*")
      .replace(/__(?=\S)([\s\S]*?\S)__/g, "_$1_")
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "~$1~")
      .replace(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm, (_m, title: string) => `*${title}*`)
      .replace(/\[([^\]\n]+)\]\((\S+?)\)/g, (_m, label: string, url: string) => (label === url ? url : `${label} (${url})`))
  );
}
