import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Listener } from '../db/listen.js';
import { type Checkpoint, compareCheckpoints } from '../store/event-store.js';
import { coalesced } from '../coalesced.js';
import { PositionWaiters } from './position-waiters.js';

/** Pause between two reads of the checkpoints while someone waits and no announcement can come (a read is one indexed query). */
const POLL_MS = 10;
/** The same while announcements come: only a safety net for one lost with a dropped connection. */
const SAFETY_POLL_MS = 250;

/** Opens a LISTEN on the projection batches' announcements (`PROJECTED_CHANNEL`); resolves to what stops it. */
export type ListenForCheckpoints = (listener: Listener) => Promise<() => Promise<void>>;

/**
 * Waits for projections that run in other processes (`serve --role workers`) to pass a position.
 * With `listen`, each projection batch announces the lowest checkpoint of the group as it commits
 * (`RunnerOptions.announce`), and a waiter is answered on that announcement: no query, and no
 * poll interval in its latency. The checkpoints are still read now and then (every 10 ms while the
 * announcements' connection is down, every 250 ms otherwise) while someone waits. One listener and
 * one poll loop serve every waiter of the process.
 */
export class CheckpointWatcher {
  private readonly waiters = new PositionWaiters();
  /** One poll of the checkpoints at a time, shared by the waiters that ask meanwhile. */
  private readonly pollOnce = coalesced(() => this.poll());
  /** The latest lowest checkpoint announced or read. */
  private known: Checkpoint | null = null;
  private announced = false;
  private listening: Promise<(() => Promise<void>) | null> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly names: readonly string[],
    private readonly listen?: ListenForCheckpoints,
  ) {}

  /** Resolves true once every named projection has passed `position`, false after `timeoutMs`. */
  waitFor(position: Checkpoint, timeoutMs: number): Promise<boolean> {
    if (this.known && compareCheckpoints(this.known, position) >= 0) return Promise.resolve(true);
    this.listening ??= this.startListening();
    const reached = this.waiters.wait(position, timeoutMs);
    void this.pollOnce();
    return reached;
  }

  /** Stops listening for announcements. */
  async stop(): Promise<void> {
    const stop = await this.listening?.catch(() => null);
    this.listening = null;
    await stop?.();
  }

  private async startListening(): Promise<(() => Promise<void>) | null> {
    if (!this.listen) return null;
    try {
      return await this.listen({
        onNotification: (payload) => {
          if (/^\d+$/.test(payload)) this.reached({ globalPosition: BigInt(payload) });
        },
        onReconnect: () => {},
        onConnected: (connected) => (this.announced = connected),
        what: 'projection announcements connection lost; read-your-writes polls the checkpoints until it is back',
      });
    } catch {
      return null; // no announcements: the poll answers, at its faster pace
    }
  }

  private reached(lowest: Checkpoint): void {
    this.known = lowest;
    this.waiters.passed(lowest);
  }

  private async poll(): Promise<void> {
    const pause = () => new Promise((r) => setTimeout(r, this.announced ? SAFETY_POLL_MS : POLL_MS));
    // While announcements come, the first read waits its turn too: usually they answer first.
    if (this.announced) await pause();
    while (this.waiters.size > 0) {
      const slowest = await this.slowest();
      if (slowest) this.reached(slowest);
      if (this.waiters.size > 0) await pause();
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
