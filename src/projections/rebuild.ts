import { randomBytes } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { type Checkpoint, compareCheckpoints, type EventStore, START, type StoredEvent } from '../store/event-store.js';
import type { Projector } from './projector.js';

export interface RebuildProgress {
  projector: string;
  /** Events of the log replayed so far (all of them, handled or not). */
  done: number;
  /** Events in the log as far as known now (grows while the service writes). */
  total: number;
}

export interface RebuildOptions {
  batchSize?: number;
  /** Called after each batch; the rebuild waits for a promise it returns. */
  onProgress?: (progress: RebuildProgress) => void | Promise<void>;
  /** How many times the swap may find the live projection ahead of the copy before giving up. */
  maxSwapAttempts?: number;
}

export interface RebuildResult {
  projector: string;
  events: number;
  checkpoint: Checkpoint;
}

/**
 * `loyalty projections rebuild`: replays the whole log into fresh copies of a projector's tables,
 * then swaps their contents in, in one transaction, while the service keeps serving.
 *
 * 1. The copies live in a schema of their own (`loyalty_rebuild_<random>`, dropped at the end),
 *    created `like` the live tables, so indexes and unique keys behave the same. The projector
 *    runs unchanged: each batch's transaction puts that schema first on its `search_path`, so the
 *    projector's unqualified table names resolve to the copies (and anything else it reads to the
 *    live tables).
 * 2. The swap transaction takes the projector's advisory lock (the live runner's batches wait),
 *    locks the live tables against writes (reads go on), refuses if the live runner got past the
 *    copy (then it catches up and tries again: moving the checkpoint back would un-show writes
 *    that were already answered), replaces the live rows with the copies' in one statement per
 *    table, moves identity sequences past the new rows and sets the checkpoint. Readers see the
 *    old rows until the commit and the new ones after it; events after the checkpoint are applied
 *    by the live runner as usual.
 *
 * Replacing rows (rather than renaming the copies over the live tables) keeps every object that
 * points at the live tables — analysts' views, grants, comments, index names — untouched, and
 * never takes a lock that blocks readers. It costs one copy of the rows inside the swap.
 */
export async function rebuildProjection(db: Kysely<Database>, store: EventStore, projector: Projector, options: RebuildOptions = {}): Promise<RebuildResult> {
  if (projector.reactor) throw new Error(`'${projector.name}' is a reactor: replaying it would repeat its effects, so it is not rebuilt.`);
  const batchSize = options.batchSize ?? 1000;
  const scratch = `loyalty_rebuild_${randomBytes(4).toString('hex')}`;
  const live = (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]!.schema;
  const onCopies = (trx: Transaction<Database>) => sql`set local search_path to ${sql.id(scratch)}, ${sql.id(live)}`.execute(trx);

  let position = START;
  let done = 0;
  let total = await logSize(db);
  const report = async () => options.onProgress?.({ projector: projector.name, done, total: Math.max(total, done) });

  /** Applies every event after `position` to the copies; false when there was none. */
  const catchUp = async (): Promise<boolean> => {
    let moved = false;
    for (;;) {
      const { events, checkpoint } = await store.readAll(position, batchSize);
      if (events.length === 0) return moved;
      await db.transaction().execute(async (trx) => {
        await onCopies(trx);
        await applyAll(projector, events, trx);
      });
      position = checkpoint;
      done += events.length;
      moved = true;
      if (done > total) total = await logSize(db);
      await report();
    }
  };

  try {
    await sql`create schema ${sql.id(scratch)}`.execute(db);
    for (const table of projector.tables) {
      await sql`create table ${sql.id(scratch, table)} (like ${sql.id(live, table)} including all)`.execute(db);
    }
    await report();
    const attempts = options.maxSwapAttempts ?? 100;
    for (let attempt = 1; ; attempt++) {
      await catchUp();
      const swapped = await db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`projection:${projector.name}`}))`.execute(trx);
        for (const table of projector.tables) await sql`lock table ${sql.id(live, table)} in exclusive mode`.execute(trx);
        const row = await trx.selectFrom('projection_checkpoints').select('global_position').where('name', '=', projector.name).executeTakeFirst();
        const liveAt: Checkpoint = { globalPosition: BigInt(row?.global_position ?? 0) };
        if (compareCheckpoints(liveAt, position) > 0) return false;
        for (const table of projector.tables) await replaceRows(trx, live, scratch, table);
        await trx
          .insertInto('projection_checkpoints')
          .values({ name: projector.name, global_position: Number(position.globalPosition), updated_at: new Date() })
          .onConflict((oc) => oc.column('name').doUpdateSet({ global_position: Number(position.globalPosition), updated_at: new Date() }))
          .execute();
        return true;
      });
      if (swapped) break;
      if (attempt >= attempts) throw new Error(`the live '${projector.name}' projection kept moving ahead of the rebuild; try again when the service is quieter`);
    }
    return { projector: projector.name, events: done, checkpoint: position };
  } finally {
    await sql`drop schema if exists ${sql.id(scratch)} cascade`.execute(db);
  }
}

async function applyAll(projector: Projector, events: StoredEvent[], trx: Transaction<Database>): Promise<void> {
  for (const event of events) {
    if (projector.handles.has(event.type as never)) await projector.apply(event, trx);
  }
}

/** The live table gets the copy's rows; its identity sequences continue after them. */
async function replaceRows(trx: Transaction<Database>, live: string, scratch: string, table: string): Promise<void> {
  await sql`delete from ${sql.id(live, table)}`.execute(trx);
  await sql`insert into ${sql.id(live, table)} overriding system value select * from ${sql.id(scratch, table)}`.execute(trx);
  const identities = await sql<{ column_name: string }>`
    select column_name from information_schema.columns
    where table_schema = ${live} and table_name = ${table} and is_identity = 'YES'`.execute(trx);
  for (const { column_name: column } of identities.rows) {
    await sql`select setval(pg_get_serial_sequence(${`"${live}"."${table}"`}, ${column}),
      coalesce((select max(${sql.ref(column)}) from ${sql.id(live, table)}), 0) + 1, false)`.execute(trx);
  }
}

async function logSize(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
