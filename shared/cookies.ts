/**
 * Reading one cookie from a `Cookie` header: both consoles let a browser carry
 * their token in a cookie, since a page load cannot add a bearer header.
 */

/** The value of cookie `name` (URI-decoded), or undefined when absent or not decodable. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
