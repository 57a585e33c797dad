/**
 * How the connection to Telegram has fared since it last worked, pure: the
 * attempt number the reconnect loop backs off by, and whether the sink, told
 * "reconnecting" after polls failed on a live connection, must hear
 * "connected" again once a poll answers. (A reconnect that succeeds says
 * "connected" itself.)
 */
export class LinkHealth {
  /** Failed connects or polls since the last poll that answered: the backoff's attempt number (from 1). */
  #failures: number;
  /** A poll failed while connected and no poll has answered since. */
  #degraded = false;

  /** `failures`: 1 when the loop starts without a connection (it pauses first, as after a failure), else 0. */
  constructor(failures: number) {
    this.#failures = failures;
  }

  /** A poll answered. True when the sink was told otherwise and should hear "connected" now. */
  answered(): boolean {
    const recovered = this.#degraded;
    this.#failures = 0;
    this.#degraded = false;
    return recovered;
  }

  /** A connect (`connected` false) or a poll (`connected` true) failed: the attempt number to back off by. */
  failed(connected: boolean): number {
    if (connected) this.#degraded = true;
    return ++this.#failures;
  }
}
