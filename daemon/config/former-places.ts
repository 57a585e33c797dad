/**
 * How a conversation the core names without a message (a schedule's chat and
 * thread) was named before the one thread rule: its platform's own rule (the
 * descriptor's `formerPlaceOf`, the code its messages' `formerly` comes from),
 * since the core reaches the platforms only through the config.
 */
import type { NamedPlace } from "../adapters/platform.js";
import { platforms } from "../adapters/registry.js";
import type { InboundMessage } from "../vocabulary/adapter.js";

/** `formerly` for `place`, as a message there would carry it; undefined where its name never changed. */
export const formerPlaceOf = async (place: NamedPlace & Pick<InboundMessage, "platform">): Promise<InboundMessage["formerly"]> =>
  platforms.find((p) => p.type === place.platform)?.formerPlaceOf(place);
