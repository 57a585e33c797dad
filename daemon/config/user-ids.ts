/**
 * User ids as the config and the core compare them, from the registered
 * platforms' own spellings (their descriptors' `users`): the core reaches
 * the platforms only through the config.
 */
import { platforms } from "../adapters/registry.js";

/**
 * One spelling per person, whatever platform wrote it: each platform's own
 * rule (it recognises only its own spellings), then the common one. Config
 * lists are compared without knowing which platform an id is from (a route
 * matches any channel), so every rule applies to every id.
 */
export function normalizeUserId(id: string): string {
  let s = id.trim();
  for (const platform of platforms) s = platform.users.normalize(s);
  if (s !== id.trim()) return s.replace(/\s+/g, "");
  if (/^\+?[\d\s\-().]+$/.test(s) && /\d/.test(s) && (s.startsWith("+") || /\s/.test(s))) return s.replace(/[^\d]/g, "");
  return s.replace(/\s+/g, "");
}
