import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  accountKeyOf,
  accountOfAdapterNamespace,
  adapterKeyOf,
  adapterNamespaceOf,
  chatKeyOf,
  DedupeKeySchema,
  dedupeKeyOf,
  parseAccountKey,
  parseChatKey,
  sessionKeyOf,
  slotKeyOf,
} from "../../../daemon/vocabulary/keys.js";

const ids = { platform: "telegram", accountId: "bot1", chatId: "-100 42", messageId: "7" };

describe("composite keys", () => {
  // These strings are on disk in existing data directories (journal, snapshot, owed notices): they must not change.
  it("keep the formats the journal and snapshot already hold", () => {
    expect(chatKeyOf(ids)).toBe('["telegram","bot1","-100 42"]');
    expect(dedupeKeyOf(ids)).toBe('["telegram","bot1","-100 42","7"]');
    expect(sessionKeyOf({ instanceId: "inst_1", sessionBase: "telegram.bot1.group.-100" })).toBe("inst_1 telegram.bot1.group.-100");
  });

  it("give a forum topic a chat key of its own, and a chat without topics the key it always had", () => {
    expect(chatKeyOf({ ...ids, threadId: "7" })).toBe('["telegram","bot1","-100 42","7"]');
    expect(chatKeyOf({ ...ids, threadId: "7" })).not.toBe(chatKeyOf({ ...ids, threadId: "8" }));
    expect(chatKeyOf({ ...ids, threadId: undefined })).toBe(chatKeyOf(ids));
    expect(parseChatKey(chatKeyOf({ ...ids, threadId: "7" }))).toBe('["telegram","bot1","-100 42","7"]');
    // The dedupe key stays per chat: Telegram numbers messages per chat, across its topics.
    expect(dedupeKeyOf({ ...ids, threadId: "7" } as typeof ids)).toBe(dedupeKeyOf(ids));
  });

  it("keep apart what a separator inside an id would join", () => {
    expect(chatKeyOf({ platform: "a", accountId: "b,c", chatId: "d" })).not.toBe(chatKeyOf({ platform: "a", accountId: "b", chatId: "c,d" }));
    expect(slotKeyOf("i", "a b")).not.toBe(slotKeyOf("i a", "b"));
    expect(adapterKeyOf("telegram", "bot1")).not.toBe(adapterKeyOf("telegram", "bot2"));
  });

  it("read a chat key back from disk, and refuse what is not one", () => {
    expect(parseChatKey(chatKeyOf(ids))).toBe(chatKeyOf(ids));
    expect(parseChatKey("busy telegram")).toBeUndefined();
    expect(parseChatKey('["telegram","bot1"]')).toBeUndefined();
    expect(parseChatKey("[not json")).toBeUndefined();
  });

  it("parse a stored dedupe key, and refuse one of another shape", () => {
    expect(DedupeKeySchema.parse(dedupeKeyOf(ids))).toBe(dedupeKeyOf(ids));
    expect(DedupeKeySchema.safeParse(chatKeyOf(ids)).success).toBe(false);
    expect(DedupeKeySchema.safeParse(7).success).toBe(false);
  });
});

describe("account keys", () => {
  // Lease units, adapter namespaces and PostgreSQL rows (wa_auth, inbox) hold this format: it must not change.
  it("keep the format the state already holds", () => {
    expect(accountKeyOf("telegram", "bot1")).toBe("telegram:bot1");
    expect(adapterNamespaceOf("whatsapp", "wa")).toBe("adapter:whatsapp:wa");
  });

  it("read back the platform and the account, the account whole even with a colon in it", () => {
    expect(parseAccountKey(accountKeyOf("slack", "T1:bot"))).toEqual({ platform: "slack", accountId: "T1:bot" });
    for (const bad of ["", "telegram", ":bot1", "telegram:"]) expect(parseAccountKey(bad), bad).toBeUndefined();
    expect(accountOfAdapterNamespace(adapterNamespaceOf("telegram", "bot1"))).toBe("telegram:bot1");
    expect(accountOfAdapterNamespace("pairing")).toBeUndefined();
    expect(accountOfAdapterNamespace("adapter:")).toBeUndefined();
  });

  it("are built in keys.ts only: no source builds `<type>:<id>` by hand", () => {
    const root = resolve(import.meta.dirname, "../../../daemon");
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
      );
    const byHand = /\$\{[^}]*\b(type|platform)\}:\$\{[^}]*\b(id|accountId)\}/;
    const found = sources(root)
      .filter((file) => relative(root, file) !== join("vocabulary", "keys.ts"))
      .flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, i) => (byHand.test(line) ? [`${relative(root, file)}:${i + 1}`] : [])),
      );
    expect(found).toEqual([]);
  });
});
