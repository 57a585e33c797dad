/**
 * Several machines: the LINE webhook every node serves (receiver.ts) keeps
 * each verified event in the inbox under its `webhookEventId` (a redelivery
 * is the same row), answers 500 when it could not keep one, and refuses a
 * forged request without keeping anything.
 */
import pino from "pino";
import { expect, it } from "vitest";
import { forThisTest } from "../helpers/for-this-test.js";
import { lineChannelSchema } from "../../daemon/adapters/line/config.js";
import { startLineReceiver } from "../../daemon/adapters/line/receiver.js";
import { systemClock } from "../../shared/clock.js";
import { createFakeLine, type FakeLine } from "../fakes/line.js";

const TOKEN = "receiverLineChannelAccessTokenThatStaysSecret0123456789abcdef";
const SECRET = "ffeeddccbbaa99887766554433221100";
const ALICE = { userId: `U${"4".repeat(32)}` };

async function receiver(keep: (key: string, body: unknown) => Promise<void>): Promise<FakeLine> {
  const fake = forThisTest(await createFakeLine({ channelAccessToken: TOKEN, channelSecret: SECRET }));
  const channel = { ...lineChannelSchema.parse({ type: "line", channel_access_token: TOKEN, channel_secret: SECRET, http: { port: 0 } }), id: "ln" };
  const logs: string[] = [];
  forThisTest(await startLineReceiver(channel, { logger: pino({ level: "info" }, { write: (l: string) => void logs.push(l) }), clock: systemClock, keep }));
  const url = /"url":"([^"]+)"/.exec(logs.join(""))?.[1];
  if (!url) throw new Error("the receiver did not say where it listens");
  fake.setWebhookUrl(url);
  return fake;
}

it("keeps each verified event once under its webhookEventId, a redelivery the same row", async () => {
  const rows = new Map<string, unknown>();
  const fake = await receiver(async (key, body) => void rows.set(key, body));
  const event = await fake.say(ALICE, "kept for the owner");
  expect(event.status).toBe(200);
  expect(await fake.redeliver(event)).toBe(200);
  expect([...rows.keys()]).toEqual([`event:${event.webhookEventId}`]);
  expect(JSON.stringify(rows.get(`event:${event.webhookEventId}`))).toContain("kept for the owner");
});

it("answers 500 when the inbox could not keep the event, and keeps nothing of a forged one", async () => {
  const rows: string[] = [];
  let down = true;
  const fake = await receiver(async (key) => {
    if (down) throw new Error("database down");
    rows.push(key);
  });
  expect((await fake.say(ALICE, "while the database is down")).status).toBe(500);
  down = false;
  expect(await fake.post({ events: [{ type: "message", webhookEventId: "01FORGED", timestamp: 1 }] }, { secret: "0".repeat(32) })).toBe(401);
  expect(rows).toEqual([]);
});
