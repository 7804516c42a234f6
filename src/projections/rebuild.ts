import { type Kysely, sql } from 'kysely';
import { sendWaitingWrites } from '../db/deferred-writes.js';
import { withoutQueryDeadline } from '../db/query-deadline.js';
import type { DatabaseHandle } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { type Checkpoint, compareCheckpoints, type EventStore, START } from '../store/event-store.js';
import { decodeAll } from '../events/decode.js';
import { type Applied, applyEvents, type Projector, readAhead } from './projector.js';
import { dropAbandonedScratch, withScratchSchema } from './rebuild-scratch.js';
import { completeCopies, renameBlocker, renameRefusal, type SwapMethod, swapByRename, swapRows } from './rebuild-swap.js';

export interface RebuildProgress {
  /** The projectors being rebuilt, comma-separated. */
  projector: string;
  /** Events of the log replayed so far (all of them, handled or not). */
  done: number;
  /** Events in the log as far as known now (grows while the service writes). */
  total: number;
  /**
   * `replay`: the log's pages going into the copies; `indexes`: the copies getting the live
   * tables' other indexes and statistics before a renaming swap (minutes on a big log, with no
   * events to count); `swap`: the copies going in place (a rows swap copies every row).
   */
  stage: 'replay' | 'indexes' | 'swap';
}

export interface RebuildOptions {
  /**
   * Events per page of the log, applied in one transaction (default 5,000). Set-based, so bigger
   * pages mean fewer statements; but a page and the one read beside it stay alive through the
   * young generation's collections, which copy them, so past a few thousand events a page costs
   * more in garbage collection than it saves (docs/performance.md, "Projection rebuild (session 9)").
   */
  batchSize?: number;
  /** Called after each batch; the rebuild waits for a promise it returns. */
  onProgress?: (progress: RebuildProgress) => void | Promise<void>;
  /** How many times the swap may find the live projection ahead of the copy before giving up. */
  maxSwapAttempts?: number;
}

/**
 * Pages applied in one transaction on a PostgreSQL server, where each page's writes are sent while
 * the next page is built. 20 pages of 5,000 events: a few seconds, so the transaction never holds
 * back vacuum of the live tables for long.
 */
const PIPELINED_PAGES = 20;

export interface RebuildResult {
  projectors: string[];
  events: number;
  checkpoint: Checkpoint;
  /** How the copies took the live tables' place (see `SwapMethod`). */
  swap: SwapMethod;
  /** With `rows`: what kept the copies from being renamed into place. */
  rowsBecause?: string;
  /** Scratch schemas of earlier rebuilds that died halfway, dropped before this one started. */
  abandonedDropped: string[];
}

/**
 * `loyalty projections rebuild`: replays the whole log into fresh copies of the projectors' tables,
 * then swaps their contents in, in one transaction, while the service keeps serving.
 *
 * 1. The copies live in a schema of their own (`loyalty_rebuild_<random>`, dropped at the end, or
 *    by the next rebuild if this one dies: `withScratchSchema`),
 *    created `like` the live tables, so indexes and unique keys behave the same. The projectors
 *    run unchanged: each replay transaction puts that schema first on its `search_path`, so their
 *    unqualified table names resolve to the copies (and anything else they read to the live
 *    tables). The log is streamed in large pages, ONE read for all the projectors rebuilt, each
 *    page applied set-based while the next page is being read; on a server, pages are pipelined
 *    (see `catchUp`).
 * 2. Before the swap, each copy gets the live table's other indexes and keys, under their names,
 *    and its statistics (`completeCopies`), when the copies are to be renamed into place.
 * 3. The swap transaction takes the projectors' advisory locks (the live runner's batches skip
 *    them), refuses if a live projector got past the copy (then it catches up and tries again:
 *    moving a checkpoint back would un-show writes that were already answered), puts the copies in
 *    place and sets the checkpoints. Readers see the old rows until the commit and the new ones
 *    after it; events after the checkpoint are applied by the live runner as usual.
 *
 * The copies take the live tables' names (`swapByRename`: the views on them are pointed at the new
 * tables, grants and comments carried) when nothing but views depends on the live tables, and the
 * swap gets them to itself within `RENAME_LOCK_TIMEOUT`; otherwise their rows replace the live
 * rows (`swapRows`), which keeps every object that points at the live tables and never makes a
 * reader wait, at the cost of one copy of the rows inside the swap (about a third of the rebuild's
 * time with a million events, docs/performance.md).
 */
export function rebuildProjections(
  database: DatabaseHandle,
  store: EventStore,
  projectors: readonly Projector[],
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  const reactor = projectors.find((p) => p.reactor);
  if (reactor) return Promise.reject(new Error(`'${reactor.name}' is a reactor: replaying it would repeat its effects, so it is not rebuilt.`));
  // A rebuild may run long (big pages, the swap waiting for a lock): no query deadline.
  return withoutQueryDeadline(() =>
    withScratchSchema(database, async (scratch) => {
      const abandonedDropped = await dropAbandonedScratch(database);
      return { ...(await rebuild(database, store, projectors, scratch, options)), abandonedDropped };
    }),
  );
}

async function rebuild(
  { db, kind }: DatabaseHandle,
  store: EventStore,
  projectors: readonly Projector[],
  scratch: string,
  options: RebuildOptions,
): Promise<Omit<RebuildResult, 'abandonedDropped'>> {
  const names = projectors.map((p) => p.name);
  const batchSize = options.batchSize ?? 5_000;
  // PGlite has one connection: a transaction over several pages would hold it from the log's reads.
  const pagesPerTransaction = kind === 'postgres' ? PIPELINED_PAGES : 1;
  const live = (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]!.schema;
  const tables = projectors.flatMap((p) => p.tables);

  let position = START;
  let done = 0;
  let total = await store.countEvents(START);
  const report = async (stage: RebuildProgress['stage'] = 'replay') => options.onProgress?.({ projector: names.join(', '), done, total: Math.max(total, done), stage });

  /**
   * The page of the log after `after`, decoded as soon as it arrives: while the last page is being
   * applied (mostly waiting on PostgreSQL), this one is read and decoded beside it.
   */
  const pageAfter = (after: Checkpoint) => {
    const page = store.readAll(after, batchSize, { metadata: 'projection' }).then(({ events, checkpoint }) => ({ count: events.length, decoded: decodeAll(events), checkpoint }));
    page.catch(() => undefined); // awaited on the next turn; if this turn fails, nobody will
    return page;
  };

  /**
   * Applies every event after `position` to the copies, reading each page while the last one is
   * applied. Up to `pagesPerTransaction` pages go in one transaction, pipelined: a page's writes
   * (the projectors' deferred writes, most of PostgreSQL's work) are sent as soon as it is applied,
   * (`sendWaitingWrites`), and the next page is built in JavaScript while PostgreSQL executes
   * them. The transaction's later statements go once they are answered, so each page still sees
   * the one before it; but the reads a page makes as it begins (the lots its debits name) are sent
   * ahead of the page before's writes, and corrected for them (`Projector.readAhead`), so that its
   * JavaScript need not wait for those writes either.
   */
  const catchUp = async (): Promise<void> => {
    let page = pageAfter(position);
    for (;;) {
      let current = await page;
      if (current.count === 0) return;
      await db.transaction().execute(async (trx) => {
        await sql`set local search_path to ${sql.id(scratch)}, ${sql.id(live)}`.execute(trx);
        let sending: Promise<unknown> = Promise.resolve();
        let ahead: unknown[] = [];
        for (let pages = 1; ; pages++) {
          page = pageAfter(current.checkpoint);
          const applied: Applied[] = [];
          for (const [i, projector] of projectors.entries()) applied.push(await applyEvents(projector, current.decoded, trx, undefined, ahead[i]));
          await sending; // at most one page's writes out at a time
          done += current.count;
          if (pages === pagesPerTransaction) break;
          // The next page's reads go before this page's writes, so that they need not wait for them.
          // (The page has nearly always arrived by now: it was read while this one was applied.)
          const next = await page;
          ahead = next.count === 0 ? [] : projectors.map((projector, i) => readAhead(projector, applied[i], next.decoded, trx));
          sending = (await sendWaitingWrites(trx)).answered;
          await report(); // a page within the transaction: only on a server, where others' statements need not wait for it
          if (next.count === 0) break;
          current = next;
        }
        await sending;
      });
      position = current.checkpoint;
      // Everything up to `position` is done: only the rest of the log needs counting again.
      if (done > total) total = done + (await store.countEvents(position));
      await report();
    }
  };

  try {
    await sql`create schema ${sql.id(scratch)}`.execute(db);
    // Asked again under the swap's locks; if something stops it by then, rows are copied after all.
    const blocker = await renameBlocker(db, live, tables);
    const renamable = blocker === null;
    for (const table of tables) await createCopy(db, live, scratch, table, renamable);
    await report();
    const attempts = options.maxSwapAttempts ?? 100;
    for (let attempt = 1; ; attempt++) {
      await catchUp();
      if (renamable && attempt === 1) {
        await report('indexes');
        await completeCopies(db, live, scratch, tables);
      }
      await report('swap');
      const swapped = await swap(db, names, tables, live, scratch, position, blocker);
      if (swapped) return { projectors: names, events: done, checkpoint: position, ...swapped };
      if (attempt >= attempts) throw new Error(`the live '${names.join(', ')}' projection kept moving ahead of the rebuild; try again when the service is quieter`);
    }
  } finally {
    await sql`drop schema if exists ${sql.id(scratch)} cascade`.execute(db);
  }
}

/** One projector: `rebuildProjections` of it alone. */
export async function rebuildProjection(
  database: DatabaseHandle,
  store: EventStore,
  projector: Projector,
  options: RebuildOptions = {},
): Promise<{ projector: string; events: number; checkpoint: Checkpoint; swap: SwapMethod; rowsBecause?: string }> {
  const { projectors: _projectors, abandonedDropped: _dropped, ...result } = await rebuildProjections(database, store, [projector], options);
  return { projector: projector.name, ...result };
}

/**
 * Puts the copies in place of the live tables (renamed unless `blocker` says why not, or something
 * found under the locks stops it, else by copying rows: see `SwapMethod`) and sets the
 * checkpoints, in one transaction; null, with nothing changed, when a live projector is ahead of
 * the copies.
 */
async function swap(
  db: Kysely<Database>,
  names: string[],
  tables: string[],
  live: string,
  scratch: string,
  position: Checkpoint,
  blocker: string | null,
): Promise<{ swap: SwapMethod; rowsBecause?: string } | null> {
  const inTransaction = (rename: boolean) =>
    db.transaction().execute(async (trx) => {
      // Blocking locks, always in the same order; runners only try theirs, so nobody waits in a cycle.
      for (const name of [...names].sort()) await sql`select pg_advisory_xact_lock(hashtext(${`projection:${name}`}))`.execute(trx);
      const rows = await trx.selectFrom('projection_checkpoints').select(['name', 'global_position']).where('name', 'in', names).execute();
      if (rows.some((row) => compareCheckpoints({ globalPosition: BigInt(row.global_position) }, position) > 0)) return null;
      const stopped = rename ? await swapByRename(trx, live, scratch, tables) : blocker;
      if (stopped !== null) await swapRows(trx, live, scratch, tables);
      const at = Number(position.globalPosition);
      await trx
        .insertInto('projection_checkpoints')
        .values(names.map((name) => ({ name, global_position: at, updated_at: new Date() })))
        .onConflict((oc) => oc.column('name').doUpdateSet({ global_position: at, updated_at: new Date() }))
        .execute();
      return stopped === null ? { swap: 'renamed' as const } : { swap: 'rows' as const, rowsBecause: stopped };
    });
  if (blocker === null) {
    try {
      return await inTransaction(true);
    } catch (error) {
      const refusal = renameRefusal(error);
      if (refusal === null) throw error;
      blocker = refusal;
    }
  }
  return inTransaction(false);
}

/**
 * An empty copy of a live table for the replay, with the live table's columns, defaults,
 * identities, checks, primary key and unique constraints (under the live names) — so a row the
 * live table would refuse fails the replay too, and the projectors' lookups by key stay indexed —
 * but not the indexes that only serve reads, nor a unique constraint on an identity column alone
 * (the `seq` of every read model, unique by construction): the replay need not maintain them, and
 * `completeCopies` builds them after it, or the rows swap fills the live table's.
 *
 * Logged when it is to be renamed into place; else unlogged: thrown away if anything fails, its
 * rows need no WAL (the rows swap writes the live table's as usual).
 */
async function createCopy(db: Kysely<Database>, live: string, scratch: string, table: string, logged: boolean): Promise<void> {
  const persistence = logged ? sql`` : sql`unlogged`;
  await sql`create ${persistence} table ${sql.id(scratch, table)} (like ${sql.id(live, table)} including all excluding indexes)`.execute(db);
  const keys = await sql<{ name: string; def: string }>`
    select quote_ident(c.conname) as name, pg_get_constraintdef(c.oid) as def from pg_constraint c
    where c.conrelid = ${`"${live}"."${table}"`}::regclass and c.contype in ('p', 'u')
      and not (cardinality(c.conkey) = 1 and exists (
        select 1 from pg_attribute a where a.attrelid = c.conrelid and a.attnum = c.conkey[1] and a.attidentity <> ''))
    order by c.conname`.execute(db);
  for (const { name, def } of keys.rows) await sql`alter table ${sql.id(scratch, table)} add constraint ${sql.raw(name)} ${sql.raw(def)}`.execute(db);
}
