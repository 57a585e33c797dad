/**
 * The Socket Mode supervisor alone (connection.ts), against the Slack fake's
 * real WebSocket, its watchdog on a manual clock: a connection that carried
 * events and then goes quiet for `deafAfterMs` is replaced once; the new one,
 * quiet as well, is not replaced again until an event has come on it (a quiet
 * workspace is not reconnected forever).
 */
import pino from "pino";
import { expect, it, onTestFinished } from "vitest";
import { createSocketConnection, defaultSocketTuning, type SocketConnection } from "../../daemon/adapters/slack/socket-mode.js";
import type { AdapterStatusEvent } from "../../daemon/vocabulary/adapter.js";
import { createManualClock } from "../../shared/clock.js";
import { seededRandom } from "../../shared/random.js";
import { createFakeSlack, waitFor } from "../fakes/slack.js";

it("replaces a deaf connection once, then waits for traffic before it watches again", async () => {
  const fake = await createFakeSlack({ botToken: "xoxb-1-2-x", appToken: "xapp-1-A1-2-x", signingSecret: "socketTestSecret0123456789", mode: "socket" });
  onTestFinished(() => fake.close());
  const clock = createManualClock();
  const reports: AdapterStatusEvent[] = [];
  const events: unknown[] = [];
  const socket: SocketConnection = createSocketConnection({
    appToken: "xapp-1-A1-2-x",
    api: fake.apiBase,
    deafAfterMs: 60_000,
    clock,
    random: seededRandom(1),
    log: pino({ level: "silent" }),
    redact: (t) => t,
    report: (event) => reports.push(event),
    onEvent: async (payload) => {
      events.push(payload);
      return "ack";
    },
    onCommand: async () => "ack",
    onAction: async () => "ack",
    tuning: defaultSocketTuning,
  });
  onTestFinished(() => socket.stop());
  await socket.start();
  const deaf = () => reports.filter((r) => r.reason === "deaf").length;

  // No traffic yet: silence is not deafness.
  clock.advance(60_000);
  expect(deaf()).toBe(0);

  fake.say({ user: "U1", channel: "D1", text: "first" });
  await waitFor(() => events.length === 1, "the first event");
  await waitFor(() => fake.socketStats.acked === 1, "its ack");
  fake.goDeaf();
  clock.advance(59_999);
  expect(deaf()).toBe(0);
  clock.advance(1);
  expect(deaf()).toBe(1);
  await waitFor(() => fake.socketStats.connectionsOpened === 2 && fake.openConnections() === 1, "the replacement, the deaf one closed");

  // The new connection is quiet too: not replaced again until it has carried an event.
  clock.advance(60_000);
  clock.advance(60_000);
  expect(deaf()).toBe(1);
  fake.say({ user: "U1", channel: "D1", text: "second" });
  await waitFor(() => events.length === 2, "the event on the new connection");
  expect(reports.at(-1)?.state).toBe("connected");
  // Traffic came: it is watched again.
  clock.advance(60_000);
  expect(deaf()).toBe(2);
});
