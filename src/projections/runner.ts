import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.js';
import { type Checkpoint, compareCheckpoints, type EventStore, START } from '../store/event-store.js';
import { BackgroundLoop } from '../background-loop.js';
import type { Projector } from './projector.js';

export interface RunnerOptions {
  batchSize?: number;
  /** How often to look for events written by other processes. */
  pollMs?: number;
  logger?: Logger | undefined;
}

/**
 * Keeps one projector's read model up to date: reads committed events after its checkpoint in
 * batches and applies each batch in one transaction that also moves the checkpoint.
 *
 * Several processes may run the same projector: each batch takes a transaction-scoped advisory
 * lock and re-checks the checkpoint row under `FOR UPDATE`, so exactly one of them applies a given
 * batch and the others skip it.
 */
export class ProjectionRunner {
  private checkpoint: Checkpoint = START;
  private waiters: Array<{ position: Checkpoint; resolve: () => void }> = [];
  private loaded = false;
  private readonly appliedListeners: Array<(count: number) => void> = [];
  private readonly batchSize: number;
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly store: EventStore,
    readonly projector: Projector,
    private readonly options: RunnerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 500;
    this.loop = new BackgroundLoop(async () => typeof (await this.step()) === 'number', {
      pollMs: options.pollMs ?? 250,
      onError: (error) => options.logger?.error({ err: error, projector: projector.name }, 'projection batch failed; will retry'),
    });
  }

  get name(): string {
    return this.projector.name;
  }

  get position(): Checkpoint {
    return this.checkpoint;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Called after each batch this process applies, with its size (metrics). */
  onApplied(listener: (count: number) => void): void {
    this.appliedListeners.push(listener);
  }

  /** Asks the loop to look for new events now. */
  wake(): void {
    this.loop.wake();
  }

  /**
   * Processes every event committed so far (used by the CLI, which runs no loop). When another
   * process holds this projector, waits for it to get there instead (bounded).
   */
  async catchUp(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const outcome = await this.step();
      if (outcome === 'idle') return;
      if (outcome === 'busy') {
        if (Date.now() > deadline) throw new Error(`projection '${this.name}' is held by another process and did not catch up`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Resolves when this projector has passed `position`, or after `timeoutMs` (then returns false). */
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

  /**
   * One batch: how many events were applied (0 when the checkpoint moved elsewhere: go again at
   * once), `idle` when there was nothing to do, `busy` when another process holds this projector. The checkpoint is kept in memory and re-read only when the row under lock
   * says another process moved it: when `readAll` finds nothing after our checkpoint, nobody can
   * be ahead of it.
   */
  private async step(): Promise<number | 'idle' | 'busy'> {
    if (!this.loaded) await this.loadCheckpoint();
    const from = this.checkpoint;
    const { events, checkpoint: next } = await this.store.readAll(from, this.batchSize);
    if (events.length === 0) return 'idle';
    const outcome = await this.db.transaction().execute(async (trx) => {
      const lock = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(hashtext(${`projection:${this.name}`})) as locked`.execute(trx);
      if (!lock.rows[0]?.locked) return 'busy' as const;
      const row = await trx
        .selectFrom('projection_checkpoints')
        .select('global_position')
        .where('name', '=', this.name)
        .forUpdate()
        .executeTakeFirstOrThrow();
      if (compareCheckpoints(toCheckpoint(row), from) !== 0) return toCheckpoint(row);
      for (const event of events) {
        if (this.projector.handles.has(event.type as never)) await this.projector.apply(event, trx);
      }
      await trx
        .updateTable('projection_checkpoints')
        .set({
          global_position: Number(next.globalPosition),
          updated_at: new Date(),
        })
        .where('name', '=', this.name)
        .execute();
      return 'applied' as const;
    });
    if (outcome === 'busy') return 'busy'; // its progress shows up on a later poll
    if (outcome === 'applied') {
      this.moveTo(next);
      for (const listener of this.appliedListeners) listener(events.length);
      return events.length;
    }
    this.moveTo(outcome); // another process moved the checkpoint (or a rebuild reset it)
    return 0;
  }

  private async loadCheckpoint(): Promise<void> {
    await this.db
      .insertInto('projection_checkpoints')
      .values({ name: this.name, global_position: 0, updated_at: new Date() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('projection_checkpoints')
      .select('global_position')
      .where('name', '=', this.name)
      .executeTakeFirstOrThrow();
    this.loaded = true;
    this.moveTo(toCheckpoint(row));
  }

  private moveTo(checkpoint: Checkpoint): void {
    this.checkpoint = checkpoint;
    const ready = this.waiters.filter((w) => compareCheckpoints(checkpoint, w.position) >= 0);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const waiter of ready) waiter.resolve();
  }
}

function toCheckpoint(row: { global_position: number }): Checkpoint {
  return { globalPosition: BigInt(row.global_position) };
}
