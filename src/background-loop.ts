/** A round running longer than this is stuck: every round's I/O has a deadline far below it. */
export const STALLED_AFTER_MS = 60_000;

/**
 * Whether a loop turns, for `/healthz`: `running` (its rounds end), `failing` (they end in an
 * error: it retries with a growing pause, e.g. while the database is down), `stalled` (one round
 * has run for more than STALLED_AFTER_MS), `stopped` (not started, or shut down).
 */
export interface LoopHealth {
  state: 'running' | 'failing' | 'stalled' | 'stopped';
  /** When the last round ended (ISO 8601), null before the first. */
  last_round_at: string | null;
  /** The first failure of the current run of failures; null while rounds succeed. */
  failing_since: string | null;
  last_error: string | null;
}

/**
 * Runs `work` over and over until stopped: again at once while it makes progress, after `pollMs`
 * when it had nothing to do (or as soon as `wake()` is called — a wake during a run is not lost),
 * and after a growing back-off when it fails. Projection runners and the webhook dispatcher run on it.
 */
export class BackgroundLoop {
  private running: Promise<void> | null = null;
  private stopped = false;
  private woken = false;
  private interrupt: (() => void) | null = null;
  private roundStartedAt: number | null = null;
  private lastRoundAt: number | null = null;
  private failingSince: number | null = null;
  private lastError: string | null = null;
  private readonly now: () => number;

  constructor(
    /** One round; true when it did something (so the next round starts at once). */
    private readonly work: () => Promise<boolean>,
    private readonly options: { pollMs: number; onError: (error: unknown) => void; now?: () => number },
  ) {
    this.now = options.now ?? Date.now;
  }

  /** How the loop is doing now (see `LoopHealth`). */
  health(): LoopHealth {
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    const stalled = this.roundStartedAt !== null && this.now() - this.roundStartedAt > STALLED_AFTER_MS;
    const state = !this.running || this.stopped ? 'stopped' : stalled ? 'stalled' : this.failingSince !== null ? 'failing' : 'running';
    return { state, last_round_at: iso(this.lastRoundAt), failing_since: iso(this.failingSince), last_error: this.lastError };
  }

  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.running;
    this.running = null;
  }

  wake(): void {
    this.woken = true;
    this.interrupt?.();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      this.woken = false;
      let progressed = false;
      this.roundStartedAt = this.now();
      try {
        progressed = await this.work();
        failures = 0;
        this.failingSince = null;
        this.lastError = null;
      } catch (error) {
        failures++;
        this.failingSince ??= this.now();
        this.lastError = error instanceof Error ? error.message : String(error);
        this.options.onError(error);
      }
      this.lastRoundAt = this.now();
      this.roundStartedAt = null;
      if (failures > 0) await this.sleep(Math.min(5000, 100 * 2 ** failures));
      else if (!progressed && !this.woken && !this.stopped) await this.sleep(this.options.pollMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.interrupt = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.interrupt = done;
    });
  }
}
