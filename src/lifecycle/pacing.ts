/**
 * How long the lifecycle scheduler pauses after a round so that everyone else writing to the log
 * (requests, other processes) keeps at least `keep` of the rate they write at while it pauses.
 * A round (due work, and the wait for the read models to include it) slows the others down: they
 * share the process's thread, the group commit and the projections with it. The pacer measures by
 * how much, as the others' events per second during rounds against during pauses (smoothed over
 * rounds), and pauses just long enough:
 *
 *   kept = (round · ρ + pause) / (round + pause) ≥ keep   ⇔   pause ≥ round · (keep − ρ) / (1 − keep)
 *
 * with ρ the others' rate during rounds over their rate during pauses: a round that stops them
 * (ρ = 0) is followed by `keep / (1 − keep)` times its length. Every pause is at least `probe` of
 * its round, so ρ stays measured. When nobody else wrote in the last pause nor in the round, no
 * pause at all (a catch-up after downtime runs flat out). Pure: the scheduler tells it what it saw.
 *
 * The rate in short pauses right after rounds runs below the others' undisturbed rate (measured:
 * about 88% of it), so `keep` of it is less than `keep` of what they did before. So the pacer also
 * keeps a reference, their rate while no due work ran (the scheduler's idle polls, and any pause
 * of `longPauseMs` or more, which holds what they do now if their load changed), and pauses at
 * least long enough for a cycle to give them `keep` of that at the rate of the last pause:
 *
 *   (round · r_round + pause · r_pause) / (round + pause) ≥ keep · r_ref
 */
export class Pacer {
  /** ρ, smoothed; until a pause has been measured (since others began writing), the cautious 0 (others stop during rounds). */
  private ratio = 0;
  private measured = false;
  /** Whether others wrote during the last pause (at first: assumed, so the first round is paced). */
  private othersBetween = true;

  /** The others' events per ms while no due work ran; null until measured. */
  private reference: number | null = null;
  /** The last idle poll: when, and the log's head then. */
  private lastIdle: { at: number; head: number } | null = null;
  /** Their events per ms in the last pause; null until one is measured. */
  private pauseRate: number | null = null;

  constructor(
    private readonly keep: number,
    private readonly options: { maxPauseMs: number; smoothing: number; probe: number; longPauseMs: number } = { maxPauseMs: 5_000, smoothing: 0.3, probe: 0.1, longPauseMs: 5_000 },
  ) {}

  /** The pause after a round of `roundMs` in which others wrote `others` events. */
  pauseAfter(roundMs: number, others: number): number {
    if (this.keep <= 0 || (others === 0 && !this.othersBetween)) return 0;
    let needed = (roundMs * (this.keep - this.ratio)) / (1 - this.keep);
    if (this.reference !== null && this.pauseRate !== null) {
      const floor = this.keep * this.reference;
      needed = Math.max(needed, this.pauseRate > floor ? (floor * roundMs - others) / (this.pauseRate - floor) : this.options.maxPauseMs);
    }
    return Math.min(this.options.maxPauseMs, Math.max(roundMs * this.options.probe, needed));
  }

  /**
   * An idle poll of the loop (no due work) at `at` ms, the log's head then being `head` events:
   * between two in a row, the others wrote undisturbed, and their rate is the reference.
   */
  idle(at: number, head: number): void {
    if (this.lastIdle && at > this.lastIdle.at) this.reference = (head - this.lastIdle.head) / (at - this.lastIdle.at);
    this.lastIdle = { at, head };
  }

  /** Due work ran: the next idle poll begins a new undisturbed stretch. */
  busy(): void {
    this.lastIdle = null;
  }

  /** What a round and the pause after it measured: their lengths and the others' events in each. */
  observe(round: { ms: number; others: number }, pause: { ms: number; others: number }): void {
    this.othersBetween = pause.others > 0;
    if (!this.othersBetween) {
      // Nobody else wrote: what was measured was of writers gone (say, a bulk load); whoever comes next starts cautious.
      this.ratio = 0;
      this.measured = false;
      this.reference = null;
      this.pauseRate = null;
      return;
    }
    if (pause.ms > 0) {
      this.pauseRate = pause.others / pause.ms;
      if (pause.ms >= this.options.longPauseMs) this.reference = this.pauseRate;
    }
    if (round.ms <= 0 || pause.ms <= 0) return;
    const ratio = Math.min(1, round.others / round.ms / (pause.others / pause.ms));
    this.ratio = this.measured ? this.ratio + this.options.smoothing * (ratio - this.ratio) : ratio;
    this.measured = true;
  }
}
