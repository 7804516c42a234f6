import { type Checkpoint, compareCheckpoints, START } from '../store/event-store.js';
import { CarriedByBusiness } from './carried-by-business.js';
import type { Projector } from './projector.js';

/**
 * One projector's progress inside a `ProjectionRunner`: its checkpoint as this process last saw
 * it, who waits for it to pass a position, and who hears of each batch applied (metrics). What
 * `Projections.runners` lists, one per projector.
 */
export class ProjectorTrack {
  private checkpoint: Checkpoint = START;
  private waiters: Array<{ position: Checkpoint; resolve: () => void }> = [];
  private readonly appliedListeners: Array<(count: number) => void> = [];
  /** What the projector carries from one of this track's batches to the next. */
  readonly carried = new CarriedByBusiness();

  constructor(
    readonly projector: Projector,
    /** Asks the runner that owns this track to look for new events now. */
    readonly wake: () => void,
  ) {}

  get name(): string {
    return this.projector.name;
  }

  get position(): Checkpoint {
    return this.checkpoint;
  }

  /** Called after each batch this process applies to the projector, with its size (metrics). */
  onApplied(listener: (count: number) => void): void {
    this.appliedListeners.push(listener);
  }

  /** Resolves when the projector has passed `position`, or after `timeoutMs` (then returns false). */
  waitFor(position: Checkpoint, timeoutMs: number): Promise<boolean> {
    if (compareCheckpoints(this.checkpoint, position) >= 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      const waiter = {
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      this.waiters.push(waiter);
      this.wake();
    });
  }

  /** The checkpoint committed in the database, by this process or another one. */
  moveTo(checkpoint: Checkpoint): void {
    this.checkpoint = checkpoint;
    const ready = this.waiters.filter((w) => compareCheckpoints(checkpoint, w.position) >= 0);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const waiter of ready) waiter.resolve();
  }

  applied(count: number): void {
    for (const listener of this.appliedListeners) listener(count);
  }
}
