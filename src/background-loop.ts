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

  constructor(
    /** One round; true when it did something (so the next round starts at once). */
    private readonly work: () => Promise<boolean>,
    private readonly options: { pollMs: number; onError: (error: unknown) => void },
  ) {}

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
      try {
        progressed = await this.work();
        failures = 0;
      } catch (error) {
        failures++;
        this.options.onError(error);
        await this.sleep(Math.min(5000, 100 * 2 ** failures));
        continue;
      }
      if (!progressed && !this.woken && !this.stopped) await this.sleep(this.options.pollMs);
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
