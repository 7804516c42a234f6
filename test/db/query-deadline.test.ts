import { connect, createServer, type Server, type Socket } from 'node:net';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { DatabaseNotAnswering, withoutQueryDeadline } from '../../src/db/query-deadline.js';
import type { Database } from '../../src/db/schema.js';
import { toApiError } from '../../src/http/errors/error-response.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { event } from '../store/store-test-helpers.js';
import { openTestDatabase } from '../support/test-database.js';

const serverUrl = process.env.DATABASE_URL;
const TIMEOUT_MS = 300;

/**
 * A TCP proxy in front of the server that can freeze: while frozen it accepts connections and
 * bytes but passes nothing on, in either direction, and keeps what it got (a socket a client
 * closes included) for when it thaws — what a client sees of a SIGSTOPped server. `freezeOn(text)`
 * freezes it just before it would pass on a query containing `text`.
 */
async function startFreezingProxy(host: string, port: number) {
  let frozen = false;
  let trigger: string | null = null;
  const held: Array<() => void> = [];
  const later = (action: () => void) => (frozen ? held.push(action) : action());
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
    }
    client.on('data', (chunk: Buffer) => {
      if (trigger !== null && chunk.includes(trigger)) [frozen, trigger] = [true, null];
      later(() => upstream.write(chunk));
    });
    upstream.on('data', (chunk) => later(() => client.write(chunk)));
    client.on('close', () => later(() => upstream.end()));
    upstream.on('close', () => later(() => client.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => void (frozen = true),
    freezeOn: (text: string) => void (trigger = text),
    thaw: () => {
      frozen = false;
      for (const action of held.splice(0)) action();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Proxy = Awaited<ReturnType<typeof startFreezingProxy>>;

/** Resolves with how long `work` took to settle, and its error (if it failed). */
async function settleTimed(work: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  try {
    await work;
    return { ms: performance.now() - started, error: undefined };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

/**
 * The client-side deadline on PostgreSQL queries (src/db/query-deadline.ts), against a real server
 * behind a proxy that freezes. Needs a server, so it runs in the DATABASE_URL pass; the real
 * thing (a SIGSTOPped cluster under `loyalty serve`) is test/fault/database-frozen.test.ts.
 */
describe.runIf(serverUrl)('a PostgreSQL server that stops answering', () => {
  let direct: DatabaseHandle & { url?: string };
  let proxy: Proxy;
  let handle: DatabaseHandle;
  let db: Kysely<Database>;

  beforeAll(async () => {
    direct = await openTestDatabase();
    const url = new URL(direct.url!);
    proxy = await startFreezingProxy(url.hostname, Number(url.port || 5432));
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    handle = await openDatabase({ databaseUrl: url.toString(), timeoutMs: TIMEOUT_MS, poolSize: 4 });
    db = handle.db;
    await sql`create table frozen_writes (id int)`.execute(direct.db);
  });
  afterAll(async () => {
    proxy?.thaw();
    await handle?.close();
    await proxy?.close();
    await direct?.close();
  });
  // A failed test must not leave the next one a frozen server.
  afterEach(() => proxy.thaw());

  /** Thaws, then waits until the pool answers again (its background probe saw the server answer). */
  async function thawAndRecover(): Promise<void> {
    proxy.thaw();
    await vi.waitFor(async () => expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }]), {
      timeout: 5_000,
      interval: 50,
    });
  }

  it('fails a query left unanswered after the deadline (503 unavailable), then fails at once until the server answers again', async () => {
    await sql`select 1`.execute(db);
    proxy.freeze();
    const first = await settleTimed(sql`select 1`.execute(db));
    expect(first.error).toBeInstanceOf(DatabaseNotAnswering);
    expect(first.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(first.ms).toBeLessThan(TIMEOUT_MS + 500);
    expect(toApiError(first.error)).toMatchObject({ status: 503, code: 'unavailable' });

    const next = await settleTimed(sql`select 1`.execute(db));
    expect(next.error).toBeInstanceOf(DatabaseNotAnswering);
    expect(next.ms).toBeLessThan(50);
    await thawAndRecover();
  });

  it('discards the connection of a transaction that timed out: nothing of it commits once the server answers, and the pool never hands it out again', async () => {
    let abandonedPid = 0;
    const failed = await settleTimed(
      db.transaction().execute(async (trx) => {
        abandonedPid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
        await sql`insert into frozen_writes values (1)`.execute(trx);
        proxy.freeze();
        await sql`insert into frozen_writes values (2)`.execute(trx);
      }),
    );
    expect(failed.error).toBeInstanceOf(DatabaseNotAnswering);
    // The ROLLBACK did not wait out a second deadline on the abandoned connection.
    expect(failed.ms).toBeLessThan(TIMEOUT_MS + 500);
    await thawAndRecover();

    // The server got the second insert after the thaw, then the closed socket: it rolled back.
    await vi.waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where pid = ${abandonedPid}`.execute(direct.db);
        expect(rows[0]!.n).toBe(0);
      },
      { timeout: 5_000, interval: 50 },
    );
    expect((await sql<{ n: number }>`select count(*)::int as n from frozen_writes`.execute(direct.db)).rows[0]!.n).toBe(0);
    const pids = await Promise.all(
      Array.from({ length: 4 }, () => db.transaction().execute(async (trx) => (await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)`.execute(trx)).rows[0]!.pid)),
    );
    expect(pids).not.toContain(abandonedPid);
  });

  it('fails every append of a group-commit batch caught by the freeze with an error answered 503, fast, writes none of them, and appends again after the thaw', async () => {
    const store = new PostgresEventStore(db);
    // Frozen once the batch holds its connection and has begun: it has taken its appends.
    proxy.freezeOn('last_hash from streams');
    const streams = Array.from({ length: 20 }, (_, i) => `frozen-batch-${i}`);
    const outcomes = await Promise.all(streams.map((stream) => settleTimed(store.append([{ stream, expected: 'no_stream', events: [event()] }]))));
    for (const outcome of outcomes) {
      expect(toApiError(outcome.error), String(outcome.error)).toMatchObject({ status: 503, code: 'unavailable' });
      // One deadline for the batch, not one per append.
      expect(outcome.ms).toBeLessThan(TIMEOUT_MS + 1_000);
    }
    await thawAndRecover();

    const after = await store.append([{ stream: 'frozen-batch-after', expected: 'no_stream', events: [event()] }]);
    expect(after.revisions).toEqual({ 'frozen-batch-after': 0 });
    await vi.waitFor(async () => {
      const { rows } = await sql<{ stream_id: string }>`select stream_id from events where stream_id like 'frozen-batch-%'`.execute(direct.db);
      expect(rows.map((r) => r.stream_id)).toEqual(['frozen-batch-after']);
    });
  });

  it('fails only the query that waits too long on a server that answers (a lock held elsewhere): the others go on after one check', async () => {
    const holder = new pg.Client({ connectionString: direct.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table frozen_writes in access exclusive mode');
      const blocked = await settleTimed(sql`select count(*) from frozen_writes`.execute(db));
      expect(blocked.error).toBeInstanceOf(DatabaseNotAnswering);
      const started = performance.now();
      await vi.waitFor(() => sql`select 1`.execute(db), { timeout: 2_000, interval: 10 });
      expect(performance.now() - started).toBeLessThan(500);
    } finally {
      await holder.query('rollback').catch(() => {});
      await holder.end();
    }
  });

  it('lets work run without a deadline (migrations, rebuilds) wait for a server that pauses, even while requests fail fast', async () => {
    proxy.freeze();
    expect((await settleTimed(sql`select 1`.execute(db))).error).toBeInstanceOf(DatabaseNotAnswering);
    const patient = withoutQueryDeadline(() => sql<{ one: number }>`select 1 as one`.execute(db));
    await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2));
    expect((await settleTimed(sql`select 1`.execute(db))).error).toBeInstanceOf(DatabaseNotAnswering);
    proxy.thaw();
    expect((await patient).rows).toEqual([{ one: 1 }]);
    await thawAndRecover();
  });

  it('keeps a run without a deadline unbounded when another such run ends first, and bounds queries again after the last', async () => {
    proxy.freeze();
    const slow = withoutQueryDeadline(async () => {
      await new Promise((r) => setTimeout(r, TIMEOUT_MS / 2));
      // Sent after the quick run below has ended: still this run's, so still without a deadline.
      return sql<{ one: number }>`select 1 as one`.execute(db);
    });
    await withoutQueryDeadline(async () => 'quick');
    await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2));
    proxy.thaw();
    expect((await slow).rows).toEqual([{ one: 1 }]);
    await thawAndRecover();
    proxy.freeze();
    expect((await settleTimed(sql`select 1`.execute(db))).error).toBeInstanceOf(DatabaseNotAnswering);
    await thawAndRecover();
  });
});
