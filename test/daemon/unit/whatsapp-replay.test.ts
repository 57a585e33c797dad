/**
 * WhatsApp's replay of messages the core refused: WhatsApp never delivers a
 * message twice, so what the core could not take is kept, survives a restart
 * through the stored form, and is offered again; bounded, oldest dropped.
 */
import { describe, expect, it } from "vitest";
import { UnacceptedMessages } from "../../../daemon/adapters/whatsapp/replay.js";
import { directByPhone, imageFrom } from "../../fakes/baileys-socket.js";

const ANA = "4915111111111";
const ids = (list: UnacceptedMessages) => list.pending().map((m) => m.key.id);
/** Through JSON, as the daemon's state store keeps it. */
const restart = (list: UnacceptedMessages, max?: number) => new UnacceptedMessages(JSON.parse(JSON.stringify(list.toStored() ?? null)) as unknown, max);

describe("UnacceptedMessages", () => {
  it("keeps a refused message once, in arrival order, and lets it go once accepted or skipped", () => {
    const list = new UnacceptedMessages(undefined);
    const [a, b, c] = ["A", "B", "C"].map((id) => directByPhone(ANA, "hi", { id }));
    expect(list.note(a!, "refused")).toEqual({ changed: true });
    expect(list.note(b!, "refused")).toEqual({ changed: true });
    expect(list.note(a!, "refused")).toEqual({ changed: false });
    expect(list.note(c!, "accepted")).toEqual({ changed: false });
    expect(ids(list)).toEqual(["A", "B"]);

    expect(list.note(a!, "accepted")).toEqual({ changed: true });
    expect(list.note(b!, "skipped")).toEqual({ changed: true });
    expect(ids(list)).toEqual([]);
    expect(list.toStored()).toBeUndefined();
  });

  it("tells the same id in two chats apart", () => {
    const list = new UnacceptedMessages(undefined);
    list.note(directByPhone(ANA, "hi", { id: "SAME" }), "refused");
    list.note(directByPhone("4917622222222", "hi", { id: "SAME" }), "refused");
    expect(list.size).toBe(2);
  });

  it("drops the oldest beyond its bound and says which", () => {
    const list = new UnacceptedMessages(undefined, 2);
    for (const id of ["A", "B"]) list.note(directByPhone(ANA, "hi", { id }), "refused");
    const change = list.note(directByPhone(ANA, "hi", { id: "C" }), "refused");
    expect(change.changed).toBe(true);
    expect(change.dropped?.key.id).toBe("A");
    expect(ids(list)).toEqual(["B", "C"]);
  });

  it("survives a restart through its stored form, media keys (bytes) included", () => {
    const list = new UnacceptedMessages(undefined);
    const image = imageFrom(ANA, Buffer.alloc(4), { id: "IMG" });
    list.note(directByPhone(ANA, "first", { id: "T1" }), "refused");
    list.note(image, "refused");
    const again = restart(list);
    expect(ids(again)).toEqual(["T1", "IMG"]);
    const key = again.pending()[1]?.message?.imageMessage?.mediaKey;
    expect(key).toBeInstanceOf(Uint8Array);
    expect(key).toHaveLength(32);
  });

  it("reads anything else it finds in the state as an empty list, and leaves out entries that are not messages", () => {
    expect(new UnacceptedMessages({ not: "a list" }).size).toBe(0);
    expect(new UnacceptedMessages("junk").size).toBe(0);
    const mixed = new UnacceptedMessages([42, null, { no: "key" }, directByPhone(ANA, "kept", { id: "K" })]);
    expect(ids(mixed)).toEqual(["K"]);
  });

  it("hands out copies: offering the list again does not change it", () => {
    const list = new UnacceptedMessages(undefined);
    list.note(directByPhone(ANA, "hi", { id: "A" }), "refused");
    list.pending().pop();
    expect(ids(list)).toEqual(["A"]);
  });
});
