/**
 * A linked person's session on several machines is held by one node at a time
 * (an advisory lock on a real PostgreSQL server): a second node waits while the
 * first holds it, then reads the chain the first recorded; a node whose
 * connection dies (a kill -9) frees it at once.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it, onTestFinished } from "vitest";
import { openPostgresState } from "../../../daemon/state/postgres/index.js";
import { holdSharedSession } from "../../../daemon/state/postgres/shared-sessions.js";
import { type Clock, sleepOn, systemClock } from "../../../shared/clock.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { lacks } from "../../helpers/system-programs.js";

const noPostgres = lacks("postgres", import.meta.url);

let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(() => server?.close());

const KEY = "inst_1 person.p0123456789abcdef";

async function database(): Promise<string> {
  const url = await server.createDatabase("shared");
  const state = await openPostgresState({ kind: "postgres", url, nodeId: "migrate" }, { units: ["telegram:tg"] }); // the schema
  await state.abandon();
  return url;
}

function pool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 2 });
  p.on("error", () => {}); // a backend terminated on purpose
  onTestFinished(() => p.end().catch(() => undefined));
  return p;
}

/** A clock whose waits between attempts are counted and let go by the test, not by time. */
function steppedClock() {
  let waits = 0;
  const parked: (() => void)[] = [];
  const clock: Clock = {
    now: () => systemClock.now(),
    setTimeout(fn) {
      waits++;
      parked.push(fn);
      return { cancel: () => undefined };
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
  };
  const step = () => {
    for (const fn of parked.splice(0)) fn();
  };
  return { clock, waits: () => waits, step };
}

const until = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setImmediate(r));
};

it.skipIf(noPostgres)("a second node waits while the first holds the session, then reads the chain the first recorded", async () => {
  const url = await database();
  const first = await holdSharedSession(pool(url), systemClock, KEY, 5);
  expect(first.state).toBeUndefined();
  const stepped = steppedClock();
  let second: Awaited<ReturnType<typeof holdSharedSession>> | undefined;
  const waiting = holdSharedSession(pool(url), stepped.clock, KEY, 5).then((h) => {
    second = h;
  });
  for (const tried of [1, 2]) {
    await until(() => stepped.waits() >= tried);
    stepped.step();
  }
  await until(() => stepped.waits() >= 3);
  expect(second).toBeUndefined(); // tried three times, refused each time
  await pool(url).query("INSERT INTO session (base, unit, state) VALUES ($1, 'telegram:tg', $2)", [
    KEY,
    JSON.stringify({ generation: 0, lastResponseId: "resp_1", sessionId: "s1" }),
  ]);
  await first.release();
  stepped.step();
  await waiting;
  expect(second?.state).toEqual({ generation: 0, lastResponseId: "resp_1", sessionId: "s1" });
  await second?.release();
});

it.skipIf(noPostgres)("a holder whose connection dies (its node killed) frees the session at once", async () => {
  const url = await database();
  const admin = pool(url);
  const killed = await holdSharedSession(pool(url), systemClock, KEY, 5);
  const stepped = steppedClock();
  let taken = false;
  const waiting = holdSharedSession(pool(url), stepped.clock, KEY, 5).then((h) => {
    taken = true;
    return h;
  });
  await until(() => stepped.waits() >= 1);
  expect(taken).toBe(false);
  // With a timeout, pg_terminate_backend waits for the backend to exit (PostgreSQL 14+): its lock is free when the waiter tries again.
  await admin.query("SELECT pg_terminate_backend(pid, 5000) FROM pg_locks WHERE locktype = 'advisory' AND granted");
  stepped.step();
  await (await waiting).release();
  expect(taken).toBe(true);
  await killed.release(); // its connection is gone: discarded, nothing else
});
