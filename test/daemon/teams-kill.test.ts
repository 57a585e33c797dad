/**
 * Teams end to end under the delivery contract: the compiled daemon as its
 * own process, the fake Teams (signed activities, token endpoint, connector)
 * and the emulator in this one. A person's message is answered through the
 * real daemon and emulator; SIGKILL in the middle of the streamed reply
 * (Teams' own stream, opened by the turn's informative update), then a new
 * life ends the same stream by its id with a final message of a higher
 * sequence (never an update in place while Teams still has the stream open),
 * shown once, never posted anew. When Teams has already ended the stream for
 * its time, the new life updates the message instead, as the Agents SDK does.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it, vi } from "vitest";
import { TEAMS_LIMITS } from "../../daemon/adapters/teams/outbound.js";
import { splitReply } from "../../daemon/core/chunking.js";
import { streamText } from "../../emulator/gateway/model.js";
import { createFakeTeams, TEAMS_STREAM_LIMIT_MS } from "../fakes/teams.js";
import { openServiceFixture, type ServiceFixture } from "../helpers/bridge.js";
import { tempDir } from "./daemon-harness.js";
import { type DaemonChild, startDaemonProcess, until, writeDaemonConfig } from "./daemon-process.js";

const APP_ID = "00000000-0000-4000-8000-000000000b01";
const APP_PASSWORD = "kill~TeamsPasswordThatStaysSecret";
const TENANT = "11111111-1111-4111-8111-111111111111";
const PERSONAL = "a:personal-alice";

let service: ServiceFixture;
beforeAll(async () => {
  const fixture = await openServiceFixture("teams-kill-");
  service = fixture;
  return fixture.close;
});

function endpointOf(child: DaemonChild): string | undefined {
  return /"url":"(http:\/\/127\.0\.0\.1:\d+\/api\/messages)"/.exec(`${child.out()}${child.err()}`)?.[1];
}

async function waitForValue<T>(read: () => T | undefined, what: string): Promise<T> {
  let value: T | undefined;
  await until(() => {
    value = read();
    return value !== undefined;
  }, what);
  if (value === undefined) throw new Error(`no ${what}`);
  return value;
}

/** One run: a streamed reply, SIGKILL mid-stream, a second life; `teamsEndsStream` lets Teams' two minutes pass meanwhile. */
async function killMidStream(teamsEndsStream: boolean) {
  let teamsAhead = 0;
  const fake = await createFakeTeams({ appId: APP_ID, appPassword: APP_PASSWORD, tenantId: TENANT, now: () => Date.now() + teamsAhead });
  const dir = tempDir();
  const apiKey = service.configFor({ type: "terminal", id: "terminal" }).service.apiKey;
  const { configFile, dataDir } = writeDaemonConfig(dir.path, {
    service: { baseUrl: service.baseUrl },
    apiKey,
    instance: service.instanceId,
    // The indicator at once: the turn's informative update opens the stream before any text.
    extra: { logLevel: "info", queue: { typingDelayMs: 0 } },
    channels: [
      {
        type: "teams",
        id: "tm",
        app_id: APP_ID,
        app_password: APP_PASSWORD,
        tenant_id: TENANT,
        openIdMetadata: fake.openIdMetadata,
        tokenEndpoint: fake.tokenEndpoint,
        http: { port: 0 },
        access: { users: ["aad-alice"] },
        minEditIntervalMs: 100,
      },
    ],
  });
  const children: DaemonChild[] = [];
  const journal = () => readFileSync(join(dataDir, "journal.jsonl"), "utf8");
  try {
    const first = startDaemonProcess(configFile);
    children.push(first);
    fake.setBotEndpoint(await waitForValue(() => endpointOf(first), "the first life's endpoint"));
    expect((await fake.say("!stream 3", { id: "turn-1" })).status).toBe(200);
    const preview = await waitForValue(() => fake.messages(PERSONAL)[0], "the preview");
    await until(() => journal().includes('{"t":"preview"'), "the preview journaled");
    expect(journal().includes('{"t":"reply"')).toBe(false); // the kill is mid-stream
    first.kill();
    expect(await first.exited).toBe(null);
    const atKill = fake.messages(PERSONAL)[0]?.text;
    expect(fake.messages(PERSONAL)[0]?.stream).toBe("streaming");
    if (teamsEndsStream) teamsAhead = TEAMS_STREAM_LIMIT_MS;

    const second = startDaemonProcess(configFile);
    children.push(second);
    fake.setBotEndpoint(await waitForValue(() => endpointOf(second), "the second life's endpoint"));
    const final = splitReply(streamText(600), TEAMS_LIMITS.maxMessageLength, (c) => c.length);
    await vi.waitFor(
      () => {
        service.emulator.clock.advance(250);
        expect(fake.messages(PERSONAL).map((m) => m.text)).toEqual(final);
      },
      { timeout: 30_000, interval: 20 },
    );
    expect(atKill).not.toBe(final[0]);
    expect(fake.messages(PERSONAL).map((m) => m.id)).toEqual([preview.id]);
    const logs = children.map((c) => `${c.out()}${c.err()}`).join("");
    expect(logs).not.toContain(APP_PASSWORD);
    const activities = fake.streamActivities(PERSONAL);
    // One stream in the chat, opened by the turn's informative update; sequences only ever rise, across both lives.
    expect(activities[0]).toMatchObject({ streamType: "informative", streamSequence: 1, status: 201 });
    expect(fake.overlappingStreams()).toBe(0);
    const sequences = activities.flatMap((a) => (a.streamSequence === undefined ? [] : [a.streamSequence]));
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(sequences.length);
    const puts = fake.calls().filter((c) => c.method === "PUT");
    return { shown: fake.messages(PERSONAL)[0], activities, puts };
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await fake.close();
    dir.remove();
  }
}

it("answers through the daemon and the emulator, and after a kill -9 mid-stream the next life ends the same stream by its id", {
  timeout: 60_000,
}, async () => {
  const { shown, activities, puts } = await killMidStream(false);
  expect(shown).toMatchObject({ stream: "final", edits: 0 });
  expect(shown?.timedOut).toBeUndefined();
  expect(activities.at(-1)).toMatchObject({ type: "message", streamType: "final", streamId: shown?.id, status: 202 });
  expect(puts).toEqual([]);
});

it("after a kill -9 mid-stream and Teams' two minutes, the next life finishes the message by updating it", { timeout: 60_000 }, async () => {
  const { shown, activities, puts } = await killMidStream(true);
  expect(shown).toMatchObject({ stream: "final", timedOut: true });
  // The next life's one try to end the stream is refused; from then on the message is only updated.
  expect(activities.filter((a) => a.status === 403)).toEqual([activities.at(-1)]);
  expect(activities.at(-1)).toMatchObject({ type: "message", streamType: "final", streamId: shown?.id });
  expect(puts.length).toBe(shown?.edits);
  expect(puts.length).toBeGreaterThan(0);
});
