/**
 * A session id is any string, a header value is not (no newlines, nothing
 * beyond Latin-1, no blanks at either end). The emulator names the session to
 * the gateway in `x-session-key`: plain printable ASCII without `%` goes as it
 * is; anything else is percent-encoded, which always yields a `%`, so two
 * different ids never share a header value and every value maps back to one id.
 * The gateway keys its conversations by the header value; what the console
 * shows and looks up is the id.
 */
const PLAIN_HEADER = /^[\x21-\x24\x26-\x7e](?:[\x20-\x24\x26-\x7e]*[\x21-\x24\x26-\x7e])?$/;

/** The `x-session-key` value for a session id. */
export const sessionHeader = (session: string): string => (PLAIN_HEADER.test(session) ? session : encodeURIComponent(session));

/** The session id a header value stands for (a value no id encodes to, from another client, is kept as it is). */
export function sessionIdOf(header: string): string {
  if (!header.includes("%")) return header;
  try {
    return decodeURIComponent(header);
  } catch {
    return header;
  }
}
