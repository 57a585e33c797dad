/**
 * File names that came from outside (a chat platform, a person) made safe to store or show.
 * One home for both kinds of cleaning the project needs:
 * - `safeBaseName`: keeps the name readable (any script, spaces), drops folders, control
 *   characters and leading dots, so it can be shown and used as a file's last path part;
 * - `pathComponent`: only `[A-Za-z0-9._-]`, for a path part another system must accept as it is
 *   (the files API, the spool folder).
 */

/** Options of {@link safeBaseName}. */
export interface SafeBaseNameOptions {
  /** Longest name kept, in UTF-16 units (the start is kept). Default 200. */
  max?: number;
}

/**
 * The last path part of `name` without control characters or leading dots, trimmed and bounded;
 * `undefined` when nothing usable is left (callers choose their own fallback).
 */
export function safeBaseName(name: string | null | undefined, options: SafeBaseNameOptions = {}): string | undefined {
  const base = (name ?? "").split(/[\\/]/).pop() ?? "";
  const cleaned = base
    .replace(/[\u0000-\u001f\u007f]/g, "")
    .replace(/^\.+/, "")
    .trim()
    .slice(0, options.max ?? 200);
  return cleaned || undefined;
}

/** Options of {@link pathComponent}. */
export interface PathComponentOptions {
  /** Longest result. Default 100. */
  max?: number;
  /** Which end survives when the name is too long: the start, or the end (keeps an extension). Default `"start"`. */
  keep?: "start" | "end";
  /** Returned when nothing is left. Default `"_"`. */
  fallback?: string;
}

/** `s` with every run outside `[A-Za-z0-9._-]` replaced by `_` and no leading dot, bounded. */
export function pathComponent(s: string, options: PathComponentOptions = {}): string {
  const max = options.max ?? 100;
  const replaced = s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_");
  const bounded = options.keep === "end" ? replaced.slice(-max) : replaced.slice(0, max);
  return bounded || (options.fallback ?? "_");
}
