import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { type Checkpoint, compareCheckpoints } from '../store/event-store.js';

/** Pause between two reads of the checkpoints while someone waits (a read is one indexed query). */
const POLL_MS = 10;

/**
 * Waits for projections that run in other processes (`serve --role workers`) to pass a position,
 * by reading their checkpoints in PostgreSQL. One poll loop serves every waiter of the process,
 * and runs only while someone waits.
 */
export class CheckpointWatcher {
  private waiters: Array<{ position: Checkpoint; resolve: (reached: boolean) => void }> = [];
  private polling: Promise<void> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly names: readonly string[],
  ) {}

  /** Resolves true once every named projection has passed `position`, false after `timeoutMs`. */
  waitFor(position: Checkpoint, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(false), timeoutMs);
      const waiter = { position, resolve: (reached: boolean) => finish(reached) };
      const finish = (reached: boolean) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(reached);
      };
      this.waiters.push(waiter);
      this.polling ??= this.poll().finally(() => (this.polling = null));
    });
  }

  private async poll(): Promise<void> {
    while (this.waiters.length > 0) {
      const slowest = await this.slowest();
      for (const waiter of [...this.waiters]) {
        if (slowest && compareCheckpoints(slowest, waiter.position) >= 0) waiter.resolve(true);
      }
      if (this.waiters.length > 0) await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** The checkpoint of the projection furthest behind (null while one has none yet). */
  private async slowest(): Promise<Checkpoint | null> {
    const rows = await this.db
      .selectFrom('projection_checkpoints')
      .select(['name', 'global_position'])
      .where('name', 'in', [...this.names])
      .execute()
      .catch(() => []); // a failed read is retried on the next poll; the waiter's timeout bounds it
    if (rows.length < this.names.length) return null;
    const lowest = rows.reduce((min, r) => Math.min(min, Number(r.global_position)), Number.POSITIVE_INFINITY);
    return { globalPosition: BigInt(lowest) };
  }
}
