import { type Checkpoint, compareCheckpoints, START } from '../store/event-store.js';
import { CarriedByBusiness } from './carried-by-business.js';
import { PositionWaiters } from './position-waiters.js';
import type { Projector } from './projector.js';

/**
 * One projector's progress inside a `ProjectionRunner`: its checkpoint as this process last saw
 * it, who waits for it to pass a position, and who hears of each batch applied (metrics). What
 * `Projections.runners` lists, one per projector.
 */
export class ProjectorTrack {
  private checkpoint: Checkpoint = START;
  private readonly waiters = new PositionWaiters();
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
    const reached = this.waiters.wait(position, timeoutMs);
    this.wake();
    return reached;
  }

  /** The checkpoint committed in the database, by this process or another one. */
  moveTo(checkpoint: Checkpoint): void {
    this.checkpoint = checkpoint;
    this.waiters.passed(checkpoint);
  }

  applied(count: number): void {
    for (const listener of this.appliedListeners) listener(count);
  }
}
