/**
 * The fake Telegram bot token the tests give their daemons and fakes: shaped like a real one
 * (bot id, colon, 35-character secret) so every check of the format passes, and secret enough
 * in look that a test can assert it never shows up in logs, errors or stored state.
 */
export const TELEGRAM_BOT_TOKEN = "987654321:ZZZyyyXXXwwwVVVuuuTTTsssRRRqqqPPPoo";
