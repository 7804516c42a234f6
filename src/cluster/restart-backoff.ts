/** The pause before the first restart of a crashed child, doubled per crash in a row, and its cap. */
const FIRST_MS = 250;
const MAX_MS = 8_000;
/** A child that ran this long before crashing counts as having recovered: its next restart is quick again. */
const HEALTHY_AFTER_MS = 30_000;

/**
 * How long to wait before restarting a child that crashed, so that a child failing at once (a bad
 * deploy, a database that refuses connections) is restarted a few times a minute, not in a storm.
 *
 * @example
 * const backoff = new RestartBackoff();
 * backoff.started(Date.now());
 * // …the child crashes 2 s later:
 * backoff.crashed(Date.now()); // 250, then 500, 1000, … up to 8000 while it keeps crashing young
 */
export class RestartBackoff {
  private inARow = 0;
  private since = 0;

  /** The child was (re)started at `now` (ms). */
  started(now: number): void {
    this.since = now;
  }

  /** The child crashed at `now`: the pause (ms) before starting it again. */
  crashed(now: number): number {
    this.inARow = now - this.since >= HEALTHY_AFTER_MS ? 1 : this.inARow + 1;
    return Math.min(MAX_MS, FIRST_MS * 2 ** (this.inARow - 1));
  }
}
