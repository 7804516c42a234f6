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
 */
export class Pacer {
  /** ρ, smoothed; until a pause has been measured (since others began writing), the cautious 0 (others stop during rounds). */
  private ratio = 0;
  private measured = false;
  /** Whether others wrote during the last pause (at first: assumed, so the first round is paced). */
  private othersBetween = true;

  constructor(
    private readonly keep: number,
    private readonly options: { maxPauseMs: number; smoothing: number; probe: number } = { maxPauseMs: 5_000, smoothing: 0.3, probe: 0.1 },
  ) {}

  /** The pause after a round of `roundMs` in which others wrote `others` events. */
  pauseAfter(roundMs: number, others: number): number {
    if (this.keep <= 0 || (others === 0 && !this.othersBetween)) return 0;
    const needed = (roundMs * (this.keep - this.ratio)) / (1 - this.keep);
    return Math.min(this.options.maxPauseMs, Math.max(roundMs * this.options.probe, needed));
  }

  /** What a round and the pause after it measured: their lengths and the others' events in each. */
  observe(round: { ms: number; others: number }, pause: { ms: number; others: number }): void {
    this.othersBetween = pause.others > 0;
    if (!this.othersBetween) {
      // Nobody else wrote: what was measured was of writers gone (say, a bulk load); whoever comes next starts cautious.
      this.ratio = 0;
      this.measured = false;
      return;
    }
    if (round.ms <= 0 || pause.ms <= 0) return;
    const ratio = Math.min(1, round.others / round.ms / (pause.others / pause.ms));
    this.ratio = this.measured ? this.ratio + this.options.smoothing * (ratio - this.ratio) : ratio;
    this.measured = true;
  }
}
