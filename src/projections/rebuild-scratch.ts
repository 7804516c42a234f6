import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { DatabaseHandle } from '../db/database.js';
import type { Database } from '../db/schema.js';

const PREFIX = 'loyalty_rebuild_';
/** The names `withScratchSchema` makes, and only those: a schema someone else named with the prefix is never dropped. */
const SCRATCH_NAME = `^${PREFIX}[0-9a-f]{8}$`;

/** The scratch schemas of the rebuilds running in this process. */
const running = new Set<string>();

/** The advisory lock a rebuild holds on its scratch schema for as long as it runs. */
const lockOf = (schema: string) => sql`hashtext(${`rebuild scratch:${schema}`})`;

/**
 * Runs `work` with a new scratch schema name that is marked as in use until it returns. A rebuild
 * that dies halfway (Ctrl-C, kill -9, a lost connection) cannot drop its copies, so the next rebuild
 * drops every scratch schema whose owner is gone (`dropAbandonedScratch`). On a PostgreSQL server
 * the mark is a session advisory lock, held on a connection of its own, which PostgreSQL releases
 * when the owner's session ends however it ends; embedded, only one process opens the store (its
 * data directory's lock), so the mark is this process's own list.
 */
export async function withScratchSchema<T>(database: DatabaseHandle, work: (schema: string) => Promise<T>): Promise<T> {
  const schema = `${PREFIX}${randomBytes(4).toString('hex')}`;
  running.add(schema);
  try {
    if (database.kind !== 'postgres') return await work(schema);
    return await database.db.connection().execute(async (owner) => {
      await sql`select pg_advisory_lock(${lockOf(schema)})`.execute(owner);
      try {
        return await work(schema);
      } finally {
        await sql`select pg_advisory_unlock(${lockOf(schema)})`.execute(owner);
      }
    });
  } finally {
    running.delete(schema);
  }
}

/**
 * Drops the scratch schemas of rebuilds that no longer run, and names them. One whose owner runs
 * (in this process, or in another that holds its lock) is left alone.
 */
export async function dropAbandonedScratch({ db, kind }: DatabaseHandle): Promise<string[]> {
  const { rows } = await sql<{ schema: string }>`
    select nspname as schema from pg_namespace where nspname ~ ${SCRATCH_NAME} order by nspname`.execute(db);
  const dropped: string[] = [];
  for (const { schema } of rows) {
    if (running.has(schema)) continue;
    if (await dropIfUnowned(db, kind, schema)) dropped.push(schema);
  }
  return dropped;
}

async function dropIfUnowned(db: Kysely<Database>, kind: DatabaseHandle['kind'], schema: string): Promise<boolean> {
  if (kind !== 'postgres') {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
    return true;
  }
  // Taking the owner's lock proves the owner gone; holding it while dropping keeps a (very
  // unlikely) new rebuild of the same name from starting meanwhile.
  return db.connection().execute(async (session) => {
    const { rows } = await sql<{ free: boolean }>`select pg_try_advisory_lock(${lockOf(schema)}) as free`.execute(session);
    if (!rows[0]!.free) return false;
    try {
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(session);
      return true;
    } finally {
      await sql`select pg_advisory_unlock(${lockOf(schema)})`.execute(session);
    }
  });
}
