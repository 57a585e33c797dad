/**
 * The conversation references the bridge keeps (one per chat, from its latest
 * activity): where replies go (`serviceUrl`) and as whom. Kept in the
 * adapter's durable state, so a scheduled prompt or any proactive message
 * reaches the chat after a restart too; written before the activity is
 * handed to the core, so a reply never lacks one.
 */
import { z } from "zod";
import type { AdapterStateStore } from "../../vocabulary/adapter.js";
import type { ConversationReference } from "./inbound.js";

const Kept = z.record(
  z.string(),
  z.object({
    serviceUrl: z.string(),
    conversationId: z.string(),
    conversationType: z.string().optional(),
    tenantId: z.string().optional(),
    bot: z.object({ id: z.string(), name: z.string().optional() }),
  }),
);

const KEY = "conversations";

export class ConversationRefs {
  readonly #state: AdapterStateStore;
  readonly #refs: Map<string, ConversationReference>;

  constructor(state: AdapterStateStore) {
    this.#state = state;
    this.#refs = new Map(Object.entries(Kept.safeParse(state.get<unknown>(KEY) ?? {}).data ?? {}));
  }

  get(chatId: string): ConversationReference | undefined {
    return this.#refs.get(chatId);
  }

  /** Keeps `ref`; resolves once it is on disk (at once when nothing changed). */
  async remember(ref: ConversationReference): Promise<void> {
    const known = this.#refs.get(ref.conversationId);
    if (known && JSON.stringify(known) === JSON.stringify(ref)) return;
    this.#refs.set(ref.conversationId, ref);
    await this.#state.set(KEY, Object.fromEntries(this.#refs));
  }
}
