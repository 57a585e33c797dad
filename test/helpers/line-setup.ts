/** The LINE channel the adapter tests share: the real adapter's settings pointing at the fake LINE (both APIs), its webhook on a free port. */
import { lineChannelSchema } from "../../daemon/adapters/line/config.js";
import type { FakeLine } from "../fakes/line.js";

/** A parsed LINE channel "ln" on `fake` with the given token and secret, plus `settings`. */
export const lineChannelFor = (fake: FakeLine, credentials: { token: string; secret: string }, settings: Record<string, unknown> = {}) => ({
  ...lineChannelSchema.parse({
    type: "line",
    channel_access_token: credentials.token,
    channel_secret: credentials.secret,
    api: fake.apiBase,
    data_api: fake.apiBase,
    http: { port: 0 },
    ...settings,
  }),
  id: "ln",
});
