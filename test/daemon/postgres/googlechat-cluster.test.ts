import pg from "pg";
import { expect, it, onTestFinished } from "vitest";
import { fakeGoogleChatForTest, googleChatChannelFor } from "../../helpers/googlechat-setup.js";
import { startTestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";
import { waitUntil } from "../../helpers/wait.js";
import { startService, tempDir } from "../daemon-harness.js";
import { clusterState, platformNodes } from "./cluster-harness.js";
import type { DaemonChild } from "../daemon-process.js";

const noPostgres = lacks("postgres", import.meta.url);
const PROJECT = "975318642097";
const DM = "spaces/dm-alice";
const UNIT = "googlechat:gc";

/** The endpoint a node logged (every node serves one, whoever owns the account). */
const endpointOf = (child: DaemonChild): string | undefined =>
  [...`${child.out()}${child.err()}`.matchAll(/"url":"(http:\/\/127\.0\.0\.1:\d+\/googlechat\/events)"/g)].map((m) => m[1] ?? "").at(-1);

it.skipIf(noPostgres)("any node keeps verified events for the owner; across a kill -9 of the owner each is answered once", { timeout: 90_000 }, async () => {
  const pgServer = await startTestPostgres();
  onTestFinished(() => pgServer.close());
  const dbUrl = await pgServer.createDatabase("googlechat");
  const service = await startService();
  onTestFinished(() => service.close());
  const fake = await fakeGoogleChatForTest(PROJECT);
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 });
  onTestFinished(() => db.end());
  const dir = tempDir();
  onTestFinished(dir.remove);
  const node = platformNodes({
    dir: dir.path,
    service,
    dbUrl,
    channels: [{ ...googleChatChannelFor(fake, PROJECT, { streaming: "off", access: { users: ["users/alice"] } }), id: "gc" }],
    extra: { attachments: { enabled: false } },
  });
  const { owner, settled, inboxSize } = clusterState(db, UNIT);
  const texts = () =>
    fake
      .messages(DM)
      .filter((m) => m.sender.type === "BOT")
      .map((m) => m.text);

  const a = node("a");
  await a.waitFor((o) => o.includes("daemon started"), "a started");
  const first = await owner();
  const b = node("b");
  await b.waitFor((o) => o.includes("daemon started"), "b started");
  const [owning, other] = first === "a" ? [a, b] : [b, a];
  await waitUntil(() => endpointOf(other), "the other node's endpoint");
  fake.setEndpoint(endpointOf(other) ?? "");

  // A forged request is refused by a node that does not own the account, and nothing is kept.
  const forged = await fake.post(
    {
      type: "MESSAGE",
      space: { name: DM, spaceType: "DIRECT_MESSAGE" },
      message: { name: `${DM}/messages/f.f`, sender: { name: "users/alice" }, text: "forged" },
    },
    fake.token({}, { forged: true }),
  );
  expect(forged.status).toBe(401);

  // Posted to the node that does not own the account: kept, answered `{}`, then answered by the owner through the API.
  const hello = fake.say({ space: DM, text: "hello" });
  expect(await hello.answered).toEqual({ status: 200, body: "{}" });
  await waitUntil(() => texts().length === 1, "the first answer", 30_000);
  await settled();
  // The same event posted again (Chat's answer lost, say): kept again, answered once.
  const { via: _via, ...shown } = hello.message;
  expect((await fake.post({ type: "MESSAGE", space: { name: DM, spaceType: "DIRECT_MESSAGE" }, user: shown.sender, message: shown })).status).toBe(200);

  owning.kill();
  await owning.exited;
  // Posted to the survivor while nobody may answer yet: kept and answered at once, answered after its takeover.
  const after = fake.say({ space: DM, text: "after the kill" });
  expect((await after.answered).status).toBe(200);
  expect(await owner(first)).not.toBe(first);
  await waitUntil(() => texts().length === 2, "the answer from the next owner", 30_000);
  await settled();
  await waitUntil(async () => (await inboxSize()) === 0, "the inbox emptied", 30_000);
  expect(texts()).toEqual(["You said: hello", "You said: after the kill"]);
  expect(fake.calls().filter((c) => c.startsWith("POST /v1/spaces/dm-alice/messages"))).toHaveLength(2);
  expect(texts()).not.toContain("You said: forged");
});
