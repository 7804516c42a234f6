import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { withDeferredWrites } from './deferred-writes.js';
import { PGliteDialect } from './pglite-dialect.js';
import { withQueryDeadline } from './query-deadline.js';
import { utcTimestampParser } from './utc-timestamp.js';
import type { PlanRefresh } from './prepared-statements.js';
import type { Database } from './schema.js';

export type DatabaseKind = 'pglite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /** The server's URL (`kind` postgres), for a session of its own outside the pool (see `ProcessMark`). */
  url?: string | undefined;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** PostgreSQL server URL; without it the embedded PGlite store is used. */
  databaseUrl?: string | undefined;
  /** PGlite data directory; omitted means in memory. */
  dataDir?: string | undefined;
  /** A PGlite dump (`dumpDataDir`) to start from, which is much faster than a fresh init. */
  loadDataDir?: Blob | File | undefined;
  poolSize?: number;
  /**
   * On a PostgreSQL server: how long a query may wait for its answer, and for a connection (a new
   * one, or a free one of the pool), before it fails with 503 `unavailable` (`LOYALTY_DB_TIMEOUT_MS`;
   * default `CONNECT_TIMEOUT_MS`). Migrations and rebuilds run without it (`withoutQueryDeadline`).
   */
  timeoutMs?: number;
  /** Says when the server stops and starts answering again. */
  logger?: Logger | undefined;
  /** On a PostgreSQL server: runs of one statement text after which it is sent as a prepared statement (`LOYALTY_DB_PREPARE_THRESHOLD`); 0: never. */
  prepareThreshold?: number | undefined;
  /** On a PostgreSQL server: when connections drop their cached plans (tests pass one on a clock of their own). */
  planRefresh?: PlanRefresh | undefined;
}

/**
 * The default database deadline (`LOYALTY_DB_TIMEOUT_MS`): how long a query may wait for a
 * connection — a new one to the server, or a free one of the pool — and then for its answer,
 * before it fails (answered 503 `unavailable`). Without it a server that does not answer (a frozen
 * server or a dropped network, rather than a refused port) would hold requests until it answers
 * again (see `withQueryDeadline`).
 */
export const CONNECT_TIMEOUT_MS = 5_000;

// bigint columns hold points and positions, all within Number.MAX_SAFE_INTEGER by contract.
const INT8_OID = 20;
pg.types.setTypeParser(INT8_OID, (v) => Number(v));
const TIMESTAMPTZ_OID = 1184;
pg.types.setTypeParser(TIMESTAMPTZ_OID, utcTimestampParser(pg.types.getTypeParser(TIMESTAMPTZ_OID)));

export async function openDatabase(options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const timeoutMs = options.timeoutMs ?? CONNECT_TIMEOUT_MS;
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 20,
      connectionTimeoutMillis: timeoutMs,
      // TCP keepalive finds a server that vanished without closing the connection.
      keepAlive: true,
    });
    // A client that loses its server must not crash the process; its next query reports it (and
    // that request is answered 503). The pool's 'error' covers idle clients; a checked-out client
    // between two queries of a transaction emits on itself, which needs its own listener.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: withDeferredWrites(new PostgresDialect({ pool: withQueryDeadline(pool, { timeoutMs, logger: options.logger, prepareThreshold: options.prepareThreshold, planRefresh: options.planRefresh }) })) });
    return { db, kind: 'postgres', url: options.databaseUrl, close: () => db.destroy() };
  }
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const pglite = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  });
  const db = new Kysely<Database>({ dialect: withDeferredWrites(new PGliteDialect(pglite)) });
  return { db, kind: 'pglite', close: () => db.destroy() };
}

/** The PostgreSQL server of `DATABASE_URL`, or the KurrentDB of `EVENTSTORE_URL`, did not answer at start; the message is one line naming the variable. */
export class DatabaseUnreachable extends Error {
  override name = 'DatabaseUnreachable';
}

/**
 * Runs one query on a server just opened, so that a start against a server that is down, refuses
 * the credentials or lacks the database fails with one line (closing the pool), not with a stack
 * trace from the first migration. Names where it tried, never the password.
 */
export async function assertReachable(handle: DatabaseHandle, databaseUrl: string): Promise<void> {
  try {
    await sql`select 1`.execute(handle.db);
  } catch (error) {
    await handle.close().catch(() => {});
    const url = new URL(databaseUrl);
    const where = `${url.host || 'localhost'}${url.pathname.length > 1 ? url.pathname : ''}`;
    const why = String((error as Error).message ?? error).replace(/\s+/g, ' ').trim();
    throw new DatabaseUnreachable(`DATABASE_URL: cannot connect to PostgreSQL at ${where} (${why}).`);
  }
}
