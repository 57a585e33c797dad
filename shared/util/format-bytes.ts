/** Sizes as people read them: "20 MB", "1.5 KB", "8 bytes" (binary units, one decimal, no ".0"). */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${trim((bytes / (1024 * 1024)).toFixed(1))} MB`;
  if (bytes >= 1024) return `${trim((bytes / 1024).toFixed(1))} KB`;
  return `${bytes} bytes`;
}

const trim = (fixed: string) => fixed.replace(/\.0$/, "");
