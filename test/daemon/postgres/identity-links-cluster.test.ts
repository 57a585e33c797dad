/**
 * Identity links on several machines: two daemon processes on one real
 * PostgreSQL server, node one owning the Telegram account and node two the
 * Discord one. alice asks for a code on Telegram and uses it on Discord; her
 * direct chats then share one conversation across the two nodes (`!recall` on
 * one app shows what she said on the other), a code works once, the link
 * survives a kill -9 of the Telegram node (the other takes the account over
 * and still knows her), and `/unlink` separates the chats again.
 */
import { expect, it } from "vitest";
import { waitUntil } from "../../helpers/wait.js";
import { alice, byName, clusterPerTest, discordAlice } from "./cluster-harness.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

const startNodes = clusterPerTest();

it.skipIf(noPostgres)(
  "links Telegram and Discord across two nodes: one conversation, codes used once, kept across a kill -9, /unlink",
  { timeout: 120_000 },
  async () => {
    // A lease of 4 s: a node of a busy machine that misses a 2 s lease's renewal gives its account up,
    // and the next owner runs again a command whose answer was not recorded yet (docs/cluster.md).
    const c = await startNodes({ leaseTtlMs: 4_000, discord: true });
    const nodes = ["a", "b"].map((n) => c.node(n));
    const d = c.discord!;
    // Whoever started first took both; the node that joins gets its share (one account each).
    await waitUntil(
      async () => {
        const [tg, dc] = [await c.lease(), await c.lease("discord:dc")];
        return tg.live && dc.live && tg.holder !== dc.holder;
      },
      "the two accounts on two nodes",
      30_000,
      50,
    );
    const tgOwner = await c.owner();
    const dcOwner = await c.owner({ unit: "discord:dc" });
    await byName(nodes, dcOwner).child.waitFor((o) => /"platform":"discord","accountId":"dc","state":"connected"/.test(o), "the owner's Discord session");
    await waitUntil(() => d.liveSessions() === 1, "one live gateway session");
    const dm = d.dmChannelFor(discordAlice);
    const onTelegram = (n: number) => waitUntil(() => c.replies(alice)[n - 1], `telegram answer ${n}`, 30_000);
    const onDiscord = (n: number) => waitUntil(() => d.sentMessages(dm).map((m) => m.content)[n - 1], `discord answer ${n}`, 30_000);
    // alice's DM is one the account has served, in its catch-up state: were the account to change
    // hands during the test (a missed renewal), what she writes meanwhile is caught up.
    d.dispatchDirectMessage(discordAlice, "hi");
    expect(await onDiscord(1)).toBe("You said: hi");
    await waitUntil(async () => JSON.stringify((await c.adapterValue("discord:dc", "catchUp")) ?? {}).includes(dm), "the DM in the catch-up state", 10_000, 50);

    c.fake.privateText(alice, "/link");
    const code = /link code is ([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(await onTelegram(1))?.[1];
    expect(code).toBeDefined();
    d.dispatchDirectMessage(discordAlice, `/link ${code}`);
    expect(await onDiscord(2)).toMatch(/^Linked with your account on telegram \(tg\)/);
    // Single use, across nodes: the same code again matches nothing.
    d.dispatchDirectMessage(discordAlice, `/link ${code}`);
    expect(await onDiscord(3)).toMatch(/^That code matches nothing/);

    // One conversation, its turns run on two nodes.
    c.fake.privateText(alice, "the meeting is at noon");
    expect(await onTelegram(2)).toBe("You said: the meeting is at noon");
    d.dispatchDirectMessage(discordAlice, "and bring the slides");
    expect(await onDiscord(4)).toBe("You said: and bring the slides");
    d.dispatchDirectMessage(discordAlice, "!recall");
    expect(await onDiscord(5)).toBe("the meeting is at noon\nand bring the slides");
    await c.settled();

    // At rest: the code's hash only (the journal and the code table), one link row per identity, one shared session.
    const stored = JSON.stringify(await c.query("SELECT message FROM entry")) + JSON.stringify(await c.query("SELECT * FROM link_code"));
    expect(stored).not.toContain(code!);
    expect(stored).not.toContain(code!.replace("-", ""));
    expect(await c.query("SELECT platform, account, user_id FROM identity_link ORDER BY platform")).toEqual([
      { platform: "discord", account: "dc", user_id: discordAlice.id },
      { platform: "telegram", account: "tg", user_id: String(alice.id) },
    ]);
    expect(await c.query("SELECT count(*)::int AS n FROM session WHERE base LIKE '% person.%'")).toEqual([{ n: 1 }]);

    // kill -9 of the Telegram node: the Discord node takes the account and still knows alice as one person.
    byName(nodes, tgOwner).child.kill();
    await byName(nodes, tgOwner).child.exited;
    await c.owner({ not: tgOwner });
    c.fake.privateText(alice, "!recall");
    expect(await onTelegram(3)).toBe("the meeting is at noon\nand bring the slides\n!recall");

    // /unlink: each app goes back to its own conversation (Discord's had "hi" before the link).
    c.fake.privateText(alice, "/unlink");
    expect(await onTelegram(4)).toMatch(/^Unlinked from discord \(dc\)/);
    d.dispatchDirectMessage(discordAlice, "!recall");
    expect(await onDiscord(6)).toBe("hi");
    expect(await c.query("SELECT count(*)::int AS n FROM identity_link")).toEqual([{ n: 0 }]);
  },
);
