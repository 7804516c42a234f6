import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.js';
import type { Checkpoint, EventStore } from '../store/event-store.js';
import { accessProjector } from './access/access-projector.js';
import { catalogProjector } from './catalog/catalog-projector.js';
import { customersProjector } from './customers/customers-projector.js';
import type { Projector } from './projector.js';
import { webhooksProjector } from '../webhooks/webhooks-projector.js';
import { CheckpointWatcher } from './checkpoint-watcher.js';
import { ProjectionRunner, type RunnerOptions } from './runner.js';

export const PROJECTORS: Projector[] = [accessProjector, customersProjector, catalogProjector, webhooksProjector];

/** All read models of the service, kept current by one runner per projector. */
export class Projections {
  readonly runners: ProjectionRunner[];
  private started = false;
  private unsubscribe: (() => void) | null = null;
  private readonly watcher: CheckpointWatcher | null;

  constructor(
    db: Kysely<Database>,
    private readonly store: EventStore,
    private readonly options: RunnerOptions & {
      settleTimeoutMs?: number;
      logger?: Logger | undefined;
      /** Another process runs the loops: `settle` waits for its checkpoints rather than catching up here. */
      settleByCheckpoints?: boolean;
    } = {},
    projectors: Projector[] = PROJECTORS,
  ) {
    this.runners = projectors.map((p) => new ProjectionRunner(db, store, p, options));
    this.watcher = options.settleByCheckpoints ? new CheckpointWatcher(db, projectors.map((p) => p.name)) : null;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.store.onAppended(() => this.runners.forEach((r) => r.wake()));
    this.runners.forEach((r) => r.start());
  }

  async stop(): Promise<void> {
    this.started = false;
    this.unsubscribe?.();
    await Promise.all(this.runners.map((r) => r.stop()));
  }

  /** Applies every committed event now (for processes that run no projection loop, like the CLI). */
  async catchUp(): Promise<void> {
    for (const runner of this.runners) await runner.catchUp();
  }

  /**
   * Read-your-writes: waits until every read model includes `position`. Bounded: after the timeout
   * the write (already durable) is answered anyway, and a warning is logged.
   */
  async settle(position: Checkpoint): Promise<void> {
    if (!this.started && !this.watcher) return this.catchUp();
    const timeoutMs = this.options.settleTimeoutMs ?? 5000;
    const results = this.started
      ? await Promise.all(this.runners.map((r) => r.waitFor(position, timeoutMs)))
      : [await this.watcher!.waitFor(position, timeoutMs)];
    if (results.includes(false)) {
      this.options.logger?.warn({ position: position.globalPosition.toString() }, 'read models did not catch up in time');
    }
  }
}
