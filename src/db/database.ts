import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { PGliteDialect } from './pglite-dialect.js';
import type { Database } from './schema.js';

export type DatabaseKind = 'pglite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: DatabaseKind;
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
}

/**
 * How long a query may wait for a connection — a new one to the server, or a free one of the
 * pool — before it fails (answered 503 `unavailable`). Without it a server that does not answer
 * (a frozen server or a dropped network, rather than a refused port) would hold forever every
 * request that needs a new connection. A query sent on an already open connection is not bounded
 * by it (docs/reliability.md, "Not yet covered").
 */
export const CONNECT_TIMEOUT_MS = 5_000;

// bigint columns hold points and positions, all within Number.MAX_SAFE_INTEGER by contract.
const INT8_OID = 20;
pg.types.setTypeParser(INT8_OID, (v) => Number(v));

export async function openDatabase(options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 20,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // TCP keepalive finds a server that vanished without closing the connection.
      keepAlive: true,
    });
    // A client that loses its server must not crash the process; its next query reports it (and
    // that request is answered 503). The pool's 'error' covers idle clients; a checked-out client
    // between two queries of a transaction emits on itself, which needs its own listener.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const pglite = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return { db, kind: 'pglite', close: () => db.destroy() };
}
