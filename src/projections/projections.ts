import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.js';
import type { Checkpoint, EventStore } from '../store/event-store.js';
import type { Projector } from './projector.js';
import { CheckpointWatcher, type ListenForCheckpoints } from './checkpoint-watcher.js';
import { projectionLag } from './projection-status.js';
import type { ProjectorTrack } from './projector-track.js';
import { ProjectionRunner, type RunnerOptions } from './runner.js';

/**
 * The read models of the service (`projectors`: see src/projectors.ts), kept current by ONE runner: one read of the log per batch, every
 * projector applied in one transaction. The webhooks reactor is part of it: its message rows are
 * queued in the same transaction as its checkpoint either way, and a separate runner would cost
 * another read and transaction per batch on every write's read-your-writes path.
 */
export class Projections {
  readonly runner: ProjectionRunner;
  /** One per projector: its checkpoint, waiters and metrics hook. */
  readonly runners: ProjectorTrack[];
  private started = false;
  private unsubscribe: (() => void) | null = null;
  private readonly watcher: CheckpointWatcher | null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly store: EventStore,
    projectors: readonly Projector[],
    private readonly options: RunnerOptions & {
      settleTimeoutMs?: number;
      logger?: Logger | undefined;
      /** Another process runs the loops: `settle` waits for its checkpoints rather than catching up here. */
      settleByCheckpoints?: boolean;
      /** With settleByCheckpoints: hear the projection batches' announcements instead of polling (see `CheckpointWatcher`). */
      listenForCheckpoints?: ListenForCheckpoints;
    } = {},
  ) {
    this.runner = new ProjectionRunner(db, store, projectors, options);
    this.runners = this.runner.tracks;
    this.watcher = options.settleByCheckpoints ? new CheckpointWatcher(db, projectors.map((p) => p.name), options.listenForCheckpoints) : null;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.store.onAppended(() => this.runner.wake());
    this.runner.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.unsubscribe?.();
    await Promise.all([this.runner.stop(), this.watcher?.stop()]);
  }

  /** Applies every committed event now (for processes that run no projection loop, like the CLI). */
  async catchUp(): Promise<void> {
    await this.runner.catchUp();
  }

  /**
   * Each projector's checkpoint and how far the log's head is past it (`/readyz`, the lag gauge):
   * where the store has to count the events to tell (KurrentDB), it stops at `max`.
   */
  lag(max: number): Promise<Array<{ name: string; position: number; lag: number }>> {
    return projectionLag(this.db, this.store, this.runners.map((r) => r.name), max);
  }

  /**
   * Read-your-writes: waits until every read model includes `position`. Bounded: after the timeout
   * the write (already durable) is answered anyway, and a warning is logged.
   */
  async settle(position: Checkpoint): Promise<void> {
    if (!this.started && !this.watcher) return this.catchUp();
    const timeoutMs = this.options.settleTimeoutMs ?? 5000;
    const results = this.started
      ? [await this.runner.waitFor(position, timeoutMs)]
      : [await this.watcher!.waitFor(position, timeoutMs)];
    if (results.includes(false)) {
      this.options.logger?.warn({ position: position.globalPosition.toString() }, 'read models did not catch up in time');
    }
  }
}
