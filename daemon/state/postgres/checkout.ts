/**
 * One home for taking a connection out of the pool. pg's pool listens for
 * `error` only on idle connections; one checked out that loses its server
 * between two queries would emit `error` with no listener and end the process.
 * The next query on it fails anyway, so the listener only keeps the process up.
 */
import type pg from "pg";

/** Runs `work` on a pooled connection; a connection `work` marks broken is discarded, not reused. */
export async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient, markBroken: () => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
  try {
    return await work(client, onError);
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}
