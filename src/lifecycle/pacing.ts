/**
 * How long the lifecycle scheduler pauses after a round so that everyone else writing to the log
 * (requests, other processes) keeps `keep` of their undisturbed rate while due work runs. A round
 * (due work, and the wait for the read models to include it) slows the others down: they share the
 * group commit and the projections with it, and a request waits for its own write to be projected
 * behind the round's. Pure: the scheduler tells it what it saw, with the time.
 *
 * What it counts are the others' events: the log head's move less the round's own. Two things
 * make a single round or pause a poor measure of them, so neither is taken alone:
 * - Requests held up behind a round are answered only after it, so their next writes come in the
 *   pause: a round can look as if it slowed nobody, and a short pause as if nobody wrote in it.
 * - Their writes come in group commits, a few dozen at a time, so short spans count in lumps.
 *
 * So the pacer keeps two figures:
 * - **The reference**, their undisturbed rate. Measured while no due work runs, over the loop's
 *   idle polls of the last `idleSpanMs`; and by a probe when that is older than `reprobeMs` (a
 *   catch-up after downtime, or due work that goes on): a pause of at least `probeMs` whose second
 *   half is past the recovery from the round before it. A probe that finds them faster moves the
 *   reference there; one that finds them slower moves it by `smoothing` (a probe runs just after a
 *   round, and may not be past the recovery from it).
 * - **The balance**: over rounds and pauses, their events less `keep` × reference × elapsed time,
 *   forgetting with time constant `memoryMs`, and never more than `creditMs` of their rate ahead.
 *   After a round the pause lasts until, at the reference rate, the balance is back to zero (at
 *   least `minPause` of the round): a round that slowed them is paid back, and what a pause fell
 *   short by (a slow recovery) is paid by the next one.
 *
 * Over any few seconds of due work they so get `keep` of their reference rate, whatever the rounds
 * and pauses look like one by one. Nobody writing in a round nor in the probe after it means nobody
 * is left to keep a share for: no reference, no pauses, until someone writes in a round again (a
 * catch-up after downtime runs flat out).
 */
export class Pacer {
  /** The others' undisturbed events per ms, and when it was last measured; null: not known. */
  private reference: { rate: number; at: number } | null = null;
  /** Their events ahead (+) or behind (−) of `keep` × reference, as of `balanceAt`. */
  private balance = 0;
  private balanceAt = 0;
  /** The last probe's time: the next is due `reprobeMs` after it. */
  private probedAt = -Infinity;
  /** The idle polls since due work last ran (the log's head at each), the oldest within `idleSpanMs` of the newest. */
  private idlePolls: Array<{ at: number; head: number }> = [];

  constructor(
    private readonly keep: number,
    private readonly options: PacerOptions = DEFAULT_PACER_OPTIONS,
  ) {}

  /**
   * The pause after a round that ended at `at` (ms), lasted `roundMs` and in which others wrote
   * `others` events. A probe pause is to be measured in two halves (see `observe`).
   */
  plan(at: number, roundMs: number, others: number): PausePlan {
    if (this.keep <= 0) return NO_PAUSE;
    const { reference } = this;
    if (reference === null && others === 0) return NO_PAUSE;
    if (reference === null || at - Math.max(this.probedAt, reference.at) >= this.options.reprobeMs) {
      return { ms: Math.min(this.options.maxPauseMs, Math.max(this.options.probeMs, roundMs * this.options.probeRounds)), probe: true };
    }
    this.account(at, roundMs, others);
    const owed = -this.balance / (reference.rate * (1 - this.keep));
    return { ms: Math.min(this.options.maxPauseMs, Math.max(roundMs * this.options.minPause, owed)), probe: false };
  }

  /**
   * What a round and its pause measured (lengths, the others' events in each), the pause ending at
   * `at`; for a probe, also its second half.
   */
  observe(at: number, round: Span, pause: Span, secondHalf?: Span): void {
    if (this.keep <= 0) return;
    if (secondHalf) {
      this.probedAt = at;
      if (round.others === 0 && pause.others === 0) {
        this.forget();
        return;
      }
      if (secondHalf.ms > 0 && secondHalf.others > 0) {
        const rate = secondHalf.others / secondHalf.ms;
        const known = this.reference;
        this.reference = { rate: known === null || rate > known.rate ? rate : known.rate + this.options.smoothing * (rate - known.rate), at };
      }
      // A probe pays back whatever was owed: the balance starts afresh from it.
      this.balance = 0;
      this.balanceAt = at;
      return;
    }
    if (this.reference !== null) this.account(at, pause.ms, pause.others);
  }

  /**
   * An idle poll of the loop (no due work) at `at` ms, the log's head then being `head` events:
   * the others' rate over the idle polls of the last `idleSpanMs` is the reference, when they wrote.
   */
  idle(at: number, head: number): void {
    const polls = this.idlePolls;
    polls.push({ at, head });
    while (polls.length > 2 && at - polls[1]!.at >= this.options.idleSpanMs) polls.shift();
    const first = polls[0]!;
    if (at - first.at >= this.options.idleSpanMs / 2 && head > first.head) this.reference = { rate: (head - first.head) / (at - first.at), at };
    this.balance = 0;
    this.balanceAt = at;
  }

  /** Due work ran: the idle polls after it begin a new undisturbed stretch. */
  busy(): void {
    this.idlePolls = [];
  }

  /** What it knows, for the scheduler's debug log: the others' reference rate (events/s) and the balance (events). */
  state(): { reference: number | null; balance: number } {
    return { reference: this.reference === null ? null : Math.round(this.reference.rate * 1000), balance: Math.round(this.balance) };
  }

  /** Adds a span that ended at `at`: its events less the share kept, after forgetting what is older. */
  private account(at: number, ms: number, others: number): void {
    const rate = this.reference!.rate;
    const elapsed = Math.max(0, at - this.balanceAt);
    this.balance *= Math.exp(-elapsed / this.options.memoryMs);
    this.balance = Math.min(this.balance + others - this.keep * rate * ms, this.options.creditMs * rate);
    this.balanceAt = at;
  }

  private forget(): void {
    this.reference = null;
    this.balance = 0;
  }
}

export interface Span {
  ms: number;
  others: number;
}

export interface PausePlan {
  ms: number;
  /** Measure the pause in two halves and hand the second to `observe`: it gives the reference. */
  probe: boolean;
}

export interface PacerOptions {
  maxPauseMs: number;
  /** The shortest probe; it lasts at least `probeRounds` rounds. */
  probeMs: number;
  probeRounds: number;
  /** How often the reference is measured anew while due work goes on. */
  reprobeMs: number;
  /** The idle polls the reference is measured over (at least half of it). */
  idleSpanMs: number;
  /** How fast a probe moves the reference (1: to its value). */
  smoothing: number;
  /** How long the balance remembers. */
  memoryMs: number;
  /** How far ahead the others may get (ms of their reference rate): a long pause does not let rounds run unpaced after it. */
  creditMs: number;
  /** Every pause is at least this share of its round, so requests are never held behind rounds back to back. */
  minPause: number;
}

/** The share kept by default (`SchedulerOptions.keep`, `LOYALTY_LIFECYCLE_KEEP`). */
export const DEFAULT_KEEP = 0.85;

const NO_PAUSE: PausePlan = { ms: 0, probe: false };

export const DEFAULT_PACER_OPTIONS: PacerOptions = {
  maxPauseMs: 5_000,
  probeMs: 600,
  probeRounds: 4,
  reprobeMs: 15_000,
  idleSpanMs: 2_000,
  smoothing: 0.5,
  memoryMs: 3_000,
  creditMs: 100,
  minPause: 0.1,
};
