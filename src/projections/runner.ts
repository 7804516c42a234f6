import { CompiledQuery, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { deferredWrite } from '../db/deferred-writes.js';
import type { Database } from '../db/schema.js';
import { type Checkpoint, compareCheckpoints, type EventStore } from '../store/event-store.js';
import { BackgroundLoop, type LoopHealth } from '../background-loop.js';
import { decodeAll } from '../events/decode.js';
import { applyEvents, type Projector } from './projector.js';
import { ProjectorTrack } from './projector-track.js';

/**
 * A batch's first statement: try each projector's lock (in name order, only for the group's names,
 * `$1`), then read the held checkpoints under FOR UPDATE, which returns a row's latest committed
 * version even when another process moved it after this statement's snapshot was taken. Constant
 * text, like the next: the runner runs both on every batch.
 */
const LOCK_CHECKPOINTS = `
  with tried as materialized (
    select name, pg_try_advisory_xact_lock(hashtext('projection:' || name)) as locked
    from unnest($1::text[]) as n(name) order by name
  ), held as materialized (
    select name, global_position from projection_checkpoints
    where name = any(array(select name from tried where locked)) order by name for update
  )
  select p.name, coalesce(h.global_position, p.global_position)::text as global_position, h.name is not null as locked
  from projection_checkpoints p left join held h on h.name = p.name
  where p.name = any($1::text[]) order by p.name`;

/**
 * Moves the applied projectors' checkpoints (`$3`) to `$1`, and with `$6` (announce) notifies `$4`
 * of the group's lowest, `$5`, at commit. A plain update, so it travels with the batch's deferred
 * writes (`deferredWrite`); the notification is in what it returns, which PostgreSQL computes for
 * every row it updates even when nobody reads it, and sends once (a transaction's notifications
 * with the same channel and payload are one).
 */
const MOVE_CHECKPOINTS = `
  update projection_checkpoints set global_position = $1, updated_at = $2
  where name = any($3::text[])
  returning case when $6::boolean then pg_notify($4, $5) end`;

export interface RunnerOptions {
  batchSize?: number;
  /** How often to look for events written by other processes. */
  pollMs?: number;
  logger?: Logger | undefined;
  /** Where the loop's health reads the time (default: the system clock). */
  now?: () => Date;
  /**
   * Each batch's transaction announces, on `PROJECTED_CHANNEL`, the lowest checkpoint of the group
   * as it commits: API processes elsewhere wait for that instead of polling (PostgreSQL server only).
   */
  announce?: boolean;
}

/** The channel on which projection batches announce the lowest checkpoint of their group (a decimal position). */
export const PROJECTED_CHANNEL = 'loyalty_projected';

type StepOutcome = number | 'idle' | 'busy';

/**
 * Keeps a group of projectors' read models up to date with ONE read of the log per batch: it reads
 * the committed events after the lowest of their checkpoints and applies the batch to every
 * projector in ONE transaction that also moves their checkpoints. Each projector keeps its own
 * checkpoint row and gets only the events after it, so one that is behind (just swapped in by a
 * rebuild, or new) catches up while the others skip what they already have.
 *
 * Several processes may run the same projectors: per batch, each projector's transaction-scoped
 * advisory lock is tried and its checkpoint re-read under `FOR UPDATE`, so exactly one process
 * applies a given event to a given projector; a projector held by another process is skipped by
 * this batch (its progress is read back from its row).
 *
 * One transaction for all: a batch costs one `readAll`, one statement that locks and reads the
 * checkpoints, the projectors' set-based statements and one checkpoint update, whatever the number
 * of projectors. The price: a projector that fails rolls the batch back for all of them, which then
 * retry together (read-your-writes waits for every projector anyway, so none could answer alone).
 */
export class ProjectionRunner {
  readonly tracks: ProjectorTrack[];
  private loaded = false;
  private readonly batchSize: number;
  private readonly loop: BackgroundLoop;
  private readonly announce: boolean;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly store: EventStore,
    projectors: Projector | readonly Projector[],
    options: RunnerOptions = {},
  ) {
    const list = Array.isArray(projectors) ? projectors : [projectors as Projector];
    this.tracks = list.map((p) => new ProjectorTrack(p, () => this.wake()));
    this.batchSize = options.batchSize ?? 500;
    this.announce = options.announce ?? false;
    this.loop = new BackgroundLoop(async () => typeof (await this.step()) === 'number', {
      pollMs: options.pollMs ?? 250,
      onError: (error) => options.logger?.error({ err: error, projectors: this.name }, 'projection batch failed; will retry'),
      ...(options.now ? { now: () => options.now!().getTime() } : {}),
    });
  }

  get name(): string {
    return this.tracks.map((t) => t.name).join(', ');
  }

  /** The lowest checkpoint of the group: every projector has passed it. */
  get position(): Checkpoint {
    return lowest(this.tracks.map((t) => t.position));
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Whether this process's projection loop turns (see `LoopHealth`). */
  health(): LoopHealth {
    return this.loop.health();
  }

  /** Called after each batch this process applies, with the number of events read. */
  onApplied(listener: (count: number) => void): void {
    for (const track of this.tracks) track.onApplied(listener);
  }

  /** Asks the loop to look for new events now. */
  wake(): void {
    this.loop.wake();
  }

  /**
   * Processes every event committed so far (used by the CLI, which runs no loop). When another
   * process holds a projector, waits for it to get there instead (bounded).
   */
  async catchUp(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const outcome = await this.step();
      if (outcome === 'idle') return;
      if (outcome === 'busy') {
        if (Date.now() > deadline) throw new Error(`projections '${this.name}' are held by another process and did not catch up`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Resolves when every projector of the group has passed `position`; false after `timeoutMs`. */
  async waitFor(position: Checkpoint, timeoutMs: number): Promise<boolean> {
    const reached = await Promise.all(this.tracks.map((t) => t.waitFor(position, timeoutMs)));
    return !reached.includes(false);
  }

  /**
   * One batch: how many events were applied (0 when checkpoints moved elsewhere: go again at
   * once), `idle` when there was nothing to do, `busy` when other processes hold the projectors
   * that are behind. Checkpoints are kept in memory and re-read under lock: when `readAll` finds
   * nothing after the lowest, nobody can be ahead of it.
   */
  private async step(): Promise<StepOutcome> {
    if (!this.loaded) await this.loadCheckpoints();
    const from = this.position;
    const { events, checkpoint: next } = await this.store.readAll(from, this.batchSize, { metadata: 'projection' });
    if (events.length === 0) return 'idle';
    // Decoded once for every projector (src/events/decode.ts); types the catalogue lacks are skipped.
    const decoded = decodeAll(events);
    const names = this.tracks.map((t) => t.name);
    const result = await this.db.transaction().execute(async (trx) => {
      const locks = await trx.executeQuery<{ name: string; locked: boolean; global_position: string }>(CompiledQuery.raw(LOCK_CHECKPOINTS, [names]));
      const held = locks.rows.filter((r) => r.locked).map((r) => r.name);
      const seen = new Map<string, Checkpoint>(locks.rows.map((r) => [r.name, { globalPosition: BigInt(r.global_position) }]));
      const applied: Array<{ track: ProjectorTrack; count: number }> = [];
      for (const track of this.tracks) {
        const base = seen.get(track.name);
        // Not ours this time (another process holds it), or moved back past what we read: skip.
        if (!base || !held.includes(track.name) || compareCheckpoints(base, from) < 0 || compareCheckpoints(base, next) >= 0) continue;
        const mine = decoded.filter((e) => compareCheckpoints(e.position, base) > 0);
        await applyEvents(track.projector, mine, trx, { from: base, to: next, carried: track.carried });
        applied.push({ track, count: mine.length });
      }
      if (applied.length > 0) {
        const names = applied.map((a) => a.track.name);
        // With `announce`: every checkpoint of the group as this transaction commits, the lowest
        // being what a write's read-your-writes waits for.
        const lowestAfter = lowest(this.tracks.map((t) => (names.includes(t.name) ? next : (seen.get(t.name) ?? t.position))));
        await trx.executeQuery(
          deferredWrite(
            CompiledQuery.raw(MOVE_CHECKPOINTS, [Number(next.globalPosition), new Date(), names, PROJECTED_CHANNEL, lowestAfter.globalPosition.toString(), this.announce]),
          ),
        );
      }
      return { seen, applied, busy: held.length < names.length };
    });
    return this.settleStep(result, next, events.length);
  }

  /** After the commit: moves the tracks and tells the listeners. */
  private settleStep(
    result: { seen: Map<string, Checkpoint>; applied: Array<{ track: ProjectorTrack; count: number }>; busy: boolean },
    next: Checkpoint,
    count: number,
  ): StepOutcome {
    let moved = false;
    for (const track of this.tracks) {
      const done = result.applied.find((a) => a.track === track);
      const at = done ? next : (result.seen.get(track.name) ?? track.position);
      if (compareCheckpoints(at, track.position) !== 0) moved = true;
      track.moveTo(at);
      if (done) track.applied(done.count);
    }
    if (result.applied.length > 0) return count;
    if (moved) return 0; // another process moved a checkpoint (or a rebuild swapped one in): go again
    return result.busy ? 'busy' : 'idle';
  }

  private async loadCheckpoints(): Promise<void> {
    const names = this.tracks.map((t) => t.name);
    await this.db
      .insertInto('projection_checkpoints')
      .values(names.map((name) => ({ name, global_position: 0, updated_at: new Date() })))
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const rows = await this.db.selectFrom('projection_checkpoints').select(['name', 'global_position']).where('name', 'in', names).execute();
    for (const track of this.tracks) track.moveTo(toCheckpoint(rows.find((r) => r.name === track.name)!));
    this.loaded = true;
  }
}

function toCheckpoint(row: { global_position: number | string }): Checkpoint {
  return { globalPosition: BigInt(row.global_position) };
}

function lowest(checkpoints: Checkpoint[]): Checkpoint {
  return checkpoints.reduce((a, b) => (compareCheckpoints(a, b) <= 0 ? a : b));
}
