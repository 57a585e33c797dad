/**
 * A session no account owns (a linked person's direct chats on two accounts,
 * maybe on two nodes) is held by one node at a time: a PostgreSQL advisory lock
 * on the session key, taken on a connection kept out of the pool for as long as
 * the turn lasts. Two nodes never run turns of one shared session at once, and
 * the holder reads the chain fresh from the database after taking the lock, so
 * it continues what the other node's last turn recorded.
 *
 * The lock lives in the connection: a node killed (or whose connection drops)
 * loses it at once, as the server ends the backend; a machine that vanished
 * (power loss: no FIN) loses it once the server's TCP keepalive gives up on the
 * connection, set on it to `probeAfterS` plus three probes a second apart; a
 * node paused (SIGSTOP) keeps it, so the session waits for it, but is never
 * answered twice at once.
 * The window: a connection that broke between taking the lock and recording
 * the reply lets another node start a turn of the session before this one
 * records its answer; that turn continues from the chain before it.
 */
import type pg from "pg";
import { z } from "zod";
import { createBackoff } from "../../../shared/backoff.js";
import type { Clock } from "../../../shared/clock.js";
import { cryptoRandom } from "../../../shared/random.js";
import { SessionStateSchema, type SessionState } from "../../vocabulary/records.js";

/** Arbitrary constant: the first key of agent-bridge's shared-session locks (the second is the key's hash). */
const SESSION_LOCK = 0x61_62_73_73; // "abss"
/** How often a waiting node tries again: from 10 ms, at most every 250 ms. */
const RETRY = { baseMs: 10, maxMs: 250 };

const GotRow = z.object({ got: z.boolean() });
const StateRow = z.object({ state: SessionStateSchema });

export interface SharedSessionHold {
  /** The chain as the database holds it once the lock was taken (undefined: none yet). */
  readonly state: SessionState | undefined;
  /** Frees the lock (and its connection). */
  release(): Promise<void>;
}

/** Waits (until `signal` aborts) for the lock of session `key`, then reads its chain. `probeAfterS`: the server's keepalive on the lock's connection. */
export async function holdSharedSession(pool: pg.Pool, clock: Clock, key: string, probeAfterS: number, signal?: AbortSignal): Promise<SharedSessionHold> {
  const client = await pool.connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
  const end = () => {
    client.removeListener("error", onError);
    client.release(broken);
  };
  try {
    // Without it a holder's vanished machine would keep the lock for the kernel's default (2 hours).
    await client.query(`SET tcp_keepalives_idle = ${Math.max(1, Math.round(probeAfterS))}; SET tcp_keepalives_interval = 1; SET tcp_keepalives_count = 3`);
    const backoff = createBackoff(RETRY, cryptoRandom);
    for (;;) {
      const { rows } = await client.query("SELECT pg_try_advisory_lock($1, hashtext($2)) AS got", [SESSION_LOCK, key]);
      if (GotRow.parse(rows[0]).got) break;
      await clock.sleep(backoff.failed(), signal);
    }
    const { rows } = await client.query("SELECT state FROM session WHERE base = $1", [key]);
    const state = rows[0] === undefined ? undefined : StateRow.parse(rows[0]).state;
    return {
      state,
      async release() {
        try {
          await client.query("SELECT pg_advisory_unlock($1, hashtext($2))", [SESSION_LOCK, key]);
        } catch {
          broken = true; // a discarded connection frees its locks
        } finally {
          end();
        }
      },
    };
  } catch (error) {
    // The lock may have been granted (a read failed after it): a discarded connection frees it.
    broken = true;
    end();
    throw error;
  }
}
