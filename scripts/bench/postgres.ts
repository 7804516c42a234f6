import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';

/** The PostgreSQL server the bench uses: BENCH_PG_URL, without a database name. */
export const SERVER_URL = (process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');

export const databaseUrl = (name: string) => `${SERVER_URL}/${name}`;

/** Runs `work` with one client on `database` (default: the maintenance database). */
export async function withClient<T>(work: (client: pg.Client) => Promise<T>, database = 'postgres'): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl(database) });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Databases this run created and has not dropped yet (dropped on exit, interrupted or not). */
export const createdDatabases = new Set<string>();

/** How the names of the databases the bench creates begin (BENCH_DB_PREFIX; default `loyalty_bench`). */
const DATABASE_PREFIX = process.env.BENCH_DB_PREFIX ?? 'loyalty_bench';

/** Creates a fresh, empty database `<BENCH_DB_PREFIX>_<prefix>_<random>` and returns its name. */
export async function createDatabase(prefix: string): Promise<string> {
  const name = `${DATABASE_PREFIX}_${prefix}_${randomBytes(4).toString('hex')}`;
  await withClient((c) => c.query(`create database ${name}`));
  createdDatabases.add(name);
  return name;
}

export async function dropDatabase(name: string): Promise<void> {
  await withClient((c) => c.query(`drop database if exists ${name} with (force)`));
  createdDatabases.delete(name);
}

export interface ServerInfo {
  version: string;
  settings: Record<string, string>;
}

export async function serverInfo(): Promise<ServerInfo> {
  return withClient(async (c) => {
    const version = (await c.query<{ server_version: string }>('show server_version')).rows[0]!.server_version;
    const names = ['synchronous_commit', 'fsync', 'shared_buffers', 'max_connections', 'commit_delay', 'wal_sync_method'];
    const rows = (await c.query<{ name: string; setting: string; unit: string | null }>(
      'select name, setting, unit from pg_settings where name = any($1)',
      [names],
    )).rows;
    const settings = Object.fromEntries(rows.map((r) => [r.name, r.unit ? `${r.setting} (${r.unit})` : r.setting]));
    return { version, settings };
  });
}

/**
 * The smallest event-store append, as pgbench runs it: read one stream's current position (the
 * UPDATE … RETURNING reads and locks it, as the real store's optimistic gate does) and insert the
 * next event row under the unique (stream, position) key. A stream is picked at random among
 * 100,000, so clients almost never wait on each other: what is measured is PostgreSQL's commit path.
 */
export const PGBENCH_SCRIPT = `\\set sid random(1, 100000)
BEGIN;
UPDATE bench_streams SET version = version + 1 WHERE stream_id = 's-' || :sid RETURNING version \\gset
INSERT INTO bench_events (stream_id, stream_position, type, data) VALUES ('s-' || :sid, :version, 'PointsEarned', '{"amount": 1}');
END;
`;

const PGBENCH_SCHEMA = `
create table bench_streams (stream_id text primary key, version bigint not null);
create table bench_events (
  global_position bigint generated always as identity primary key,
  stream_id text not null,
  stream_position bigint not null,
  type text not null,
  data jsonb not null,
  unique (stream_id, stream_position)
);
insert into bench_streams select 's-' || i, 0 from generate_series(1, 100000) i;
`;

export interface PgbenchResult {
  tps: number;
  transactions: number;
  latencyMs: number | null;
  database: string;
  clients: number;
  seconds: number;
}

/**
 * The PostgreSQL append ceiling: pgbench with 32 clients on a fresh database of 100,000 streams.
 * `whileRunning`, if given, is called once pgbench has started, with the database and pgbench's pid
 * (to measure what it costs while it runs); the result waits for it.
 */
export async function measureAppendCeiling(
  tmpDir: string,
  seconds: number,
  clients = 32,
  whileRunning?: (database: string, pgbenchPid: number) => Promise<void>,
): Promise<PgbenchResult> {
  const database = await createDatabase('pgbench');
  try {
    await withClient(async (c) => {
      await c.query(PGBENCH_SCHEMA);
      await c.query('vacuum analyze bench_streams');
    }, database);
    const script = path.join(tmpDir, 'append.pgbench');
    await writeFile(script, PGBENCH_SCRIPT);
    const pgbench = execFile('pgbench', ['-n', '-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds), '-f', script, databaseUrl(database)], {
      maxBuffer: 16 * 1024 * 1024,
    });
    let stdout = '';
    pgbench.stdout?.on('data', (chunk) => (stdout += chunk));
    const exited = new Promise<void>((resolve, reject) =>
      pgbench.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pgbench exited with ${code}:\n${stdout}`)))),
    );
    await Promise.all([exited, whileRunning?.(database, pgbench.pid!)]);
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`could not read tps from pgbench:\n${stdout}`);
    const transactions = Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1] ?? NaN);
    const latency = /latency average = ([\d.]+) ms/.exec(stdout)?.[1];
    return { tps, transactions, latencyMs: latency ? Number(latency) : null, database, clients, seconds };
  } finally {
    await dropDatabase(database);
  }
}

/**
 * Samples what the backends of one database are doing (pg_stat_activity) every `everyMs` until
 * stopped: the share of samples per state, e.g. `Lock:advisory` (waiting on the append lock),
 * `IO:WALSync` (waiting on a commit's fsync), `Client:ClientRead` (idle in a transaction, waiting
 * on the service), `CPU` (running).
 */
export function sampleActivity(database: string, everyMs = 100): { stop(): Promise<Array<{ state: string; share: number }>> } {
  const counts = new Map<string, number>();
  let total = 0;
  let stopped = false;
  const done = withClient(async (c) => {
    while (!stopped) {
      const { rows } = await c.query<{ state: string | null; wait_event_type: string | null; wait_event: string | null }>(
        `select state, wait_event_type, wait_event from pg_stat_activity
          where datname = $1 and pid <> pg_backend_pid() and backend_type = 'client backend'`,
        [database],
      );
      for (const row of rows) {
        const key =
          row.state === 'idle'
            ? 'idle (no transaction)'
            : row.wait_event_type
              ? `${row.state === 'idle in transaction' ? 'in transaction, ' : ''}${row.wait_event_type}:${row.wait_event}`
              : 'CPU (running)';
        counts.set(key, (counts.get(key) ?? 0) + 1);
        total++;
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  });
  return {
    async stop() {
      stopped = true;
      await done;
      return [...counts.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([state, n]) => ({ state, share: total ? n / total : 0 }));
    },
  };
}

export interface DatabaseCounters {
  commits: number;
  rollbacks: number;
  inserted: number;
  updated: number;
  fetched: number;
}

/** Cumulative counters of one database (pg_stat_database); backends flush them about once a second. */
export async function databaseCounters(database: string): Promise<DatabaseCounters> {
  return withClient(async (c) => {
    const row = (
      await c.query<{ xact_commit: string; xact_rollback: string; tup_inserted: string; tup_updated: string; tup_fetched: string }>(
        'select xact_commit, xact_rollback, tup_inserted, tup_updated, tup_fetched from pg_stat_database where datname = $1',
        [database],
      )
    ).rows[0]!;
    return {
      commits: Number(row.xact_commit),
      rollbacks: Number(row.xact_rollback),
      inserted: Number(row.tup_inserted),
      updated: Number(row.tup_updated),
      fetched: Number(row.tup_fetched),
    };
  });
}

/** Waits until every projection checkpoint has passed the last event of the log; false on timeout. */
export async function waitForProjections(dbName: string, timeoutSeconds: number): Promise<boolean> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  return withClient(async (c) => {
    for (;;) {
      const { rows } = await c.query<{ behind: string }>(
        `select count(*) as behind from projection_checkpoints
          where global_position < (select coalesce(max(global_position), 0) from events)`,
      );
      if (Number(rows[0]!.behind) === 0) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 250));
    }
  }, dbName);
}
