import { AsyncLocalStorage } from 'node:async_hooks';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Logger } from 'pino';
import { copyDataOf } from './copy-from-stdin.js';
import { PlanRefresh, PreparedStatements } from './prepared-statements.js';

/**
 * The PostgreSQL server did not answer in time: a query got no answer within the deadline, or
 * the server is known not to be answering right now. Answered 503 `unavailable`.
 */
export class DatabaseNotAnswering extends Error {
  override name = 'DatabaseNotAnswering';
}

const unbounded = new AsyncLocalStorage<true>();
/** Runs of `withoutQueryDeadline` under way: the storage is disabled while there are none (see below). */
let unboundedRuns = 0;

/**
 * Runs `work` with no query deadline and past the "not answering" fast path: for work that may
 * legitimately run long (migrations, projection rebuilds). The pool's connection timeout still applies.
 *
 * Node 20 tracks every promise (async hooks) while an AsyncLocalStorage is enabled, and one stays
 * enabled once run: the migrations at start-up would make every request of the server's life pay
 * for it (about 6% of what an earn allocates). So the storage is disabled again when the last run
 * ends; `getStore()` then answers undefined (bounded) until the next run.
 *
 * @example
 * await withoutQueryDeadline(() => migrator.migrateToLatest());
 */
export async function withoutQueryDeadline<T>(work: () => Promise<T>): Promise<T> {
  unboundedRuns++;
  try {
    return await unbounded.run(true, work);
  } finally {
    if (--unboundedRuns === 0) unbounded.disable();
  }
}

export interface QueryDeadlineOptions {
  /** How long one query may wait for its answer. */
  timeoutMs: number;
  /** Runs of one statement text after which it is sent prepared (see `PreparedStatements`); 0: never. */
  prepareThreshold?: number | undefined;
  /** When connections drop their cached plans (default: on the process's clock, see `PlanRefresh`). */
  planRefresh?: PlanRefresh | undefined;
  /** Pause between two checks of a server that is not answering. */
  probeIntervalMs?: number;
  logger?: Logger | undefined;
}

/** pg-pool's error when a new connection got no answer in time (not when the pool was busy). */
const CONNECT_TIMEOUT = /Connection terminated due to connection timeout|timeout expired/;

/** An error that says nothing answered: no answer to a query or a connection, or no free connection. */
function isSilence(error: unknown): boolean {
  const message = (error as Error)?.message ?? '';
  return error instanceof DatabaseNotAnswering || CONNECT_TIMEOUT.test(message) || /timeout exceeded when trying to connect/.test(message);
}

/**
 * A `pg` pool for kysely in which every query has a client-side deadline: `statement_timeout`
 * cannot fire in a server that is frozen (SIGSTOP, a hung host, a partition dropping packets), and
 * TCP keepalive is answered by its kernel, so without this a query on an open connection waits
 * until the server answers again, however long that takes.
 *
 * - A query unanswered after `timeoutMs` fails with `DatabaseNotAnswering`. Its connection is
 *   abandoned: later queries on it (the transaction's ROLLBACK) fail at once, and on release the
 *   pool discards it, closing the socket; a pooled connection never goes back to the pool with a
 *   query still in flight. The server rolls back the open transaction when it sees the socket
 *   closed (a COMMIT already sent may still commit: its outcome is unknown to us).
 * - After such a timeout, or a new connection timing out, the server counts as not answering:
 *   checkouts fail at once with `DatabaseNotAnswering` (so a batch of appends, or a request's
 *   cleanup after its first failure, does not wait out the deadline once per query) while a probe
 *   (`select 1` on a connection of its own, same deadline) runs in the background every
 *   `probeIntervalMs`; the first answer ends it. On a server that answers, a query slower than the
 *   deadline (a long lock wait) so costs the others one probe's round trip.
 *
 * A per-query deadline rather than one around the whole request: killing the one connection
 * that hangs is what guarantees nothing of the request's transaction commits later, and work
 * shared by several requests (a group-commit batch) is not cut short by one request's clock.
 * Not pg's own `query_timeout`: that returns the client to the pool with the query still on the
 * socket, and the ROLLBACK queues behind it and times out in turn.
 */
export function withQueryDeadline(pool: pg.Pool, options: QueryDeadlineOptions): PostgresPool {
  const answering = new AnsweringCheck(pool, options);
  const prepared = new PreparedStatements(options.prepareThreshold);
  const plans = options.planRefresh ?? new PlanRefresh();
  return {
    async connect() {
      const bounded = !unbounded.getStore();
      if (bounded) answering.assert();
      try {
        const client = await pool.connect();
        const wrapped = boundedClient(client, options.timeoutMs, prepared, (error) => answering.lost(error));
        if (options.prepareThreshold !== 0 && plans.due(client)) {
          try {
            await wrapped.discardPlans();
          } catch (error) {
            wrapped.release();
            throw error;
          }
        }
        return wrapped;
      } catch (error) {
        if (CONNECT_TIMEOUT.test((error as Error).message ?? '')) answering.lost(error as Error);
        throw error;
      }
    },
    async end() {
      await answering.stop();
      await pool.end();
    },
  };
}

/** A checked-out client whose queries have a deadline (unless run `withoutQueryDeadline`). */
function boundedClient(
  client: pg.PoolClient,
  timeoutMs: number,
  prepared: PreparedStatements,
  onTimeout: (error: DatabaseNotAnswering) => void,
): PostgresPoolClient & { discardPlans(): Promise<unknown> } {
  let abandoned: DatabaseNotAnswering | undefined;
  const bounded = (text: string, parameters: ReadonlyArray<unknown>, named = true): Promise<pg.QueryResult> => {
    if (abandoned) return Promise.reject(new DatabaseNotAnswering(`${abandoned.message}; its connection was abandoned`));
    const rows = copyDataOf(text, parameters);
    const name = named && rows === undefined ? prepared.nameOf(text) : undefined;
    const answer =
      rows !== undefined ? copyIn(client, text, rows) : name ? client.query({ name, text, values: parameters as unknown[] }) : client.query(text, parameters as unknown[]);
    if (unbounded.getStore()) return answer;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        abandoned ??= new DatabaseNotAnswering(`PostgreSQL did not answer a query within ${timeoutMs} ms`);
        onTimeout(abandoned);
        reject(abandoned);
      }, timeoutMs);
      answer.then(
        (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  };
  function query<R>(text: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  function query(textOrCursor: string | PostgresCursor<unknown>, parameters: ReadonlyArray<unknown> = []): unknown {
    // A cursor (kysely's streaming) is driven by its reader, read by read: passed through.
    return typeof textOrCursor === 'string' ? bounded(textOrCursor, parameters) : client.query(textOrCursor as unknown as pg.Submittable);
  }
  return {
    query,
    /** Drops the connection's cached plans (see `PlanRefresh`); its statements stay prepared. */
    discardPlans: () => bounded('discard plans', [], false),
    // An abandoned client is removed from the pool; pg then destroys its socket (a query is in flight).
    release: () => client.release(abandoned),
  };
}

/** Runs a `copyFromStdin` statement: the statement, then its rows as one message (see `copyFromStdin`). */
function copyIn(client: pg.PoolClient, text: string, rows: string): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const stream = client.query(copyFrom(text));
    stream.on('finish', () => resolve({ command: 'COPY', rowCount: stream.rowCount, rows: [], oid: 0, fields: [] }));
    stream.on('error', reject);
    stream.end(rows);
  });
}

/** Whether the server answers: set by timeouts, cleared by the first probe that gets an answer. */
class AnsweringCheck {
  private down: Error | null = null;
  private since = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  /** The probe's own connection: a pool busy with slow queries must not delay it (nor be mistaken for silence). */
  private readonly probes: pg.Pool;

  constructor(
    pool: pg.Pool,
    private readonly options: QueryDeadlineOptions,
  ) {
    this.probes = new pg.Pool({ ...pool.options, max: 1 });
    this.probes.on('error', () => {});
    this.probes.on('connect', (client) => client.on('error', () => {}));
  }

  assert(): void {
    if (!this.down) return;
    const seconds = Math.round((Date.now() - this.since) / 1000);
    throw new DatabaseNotAnswering(`PostgreSQL is not answering (${seconds} s ago: ${this.down.message}); checked again in the background`);
  }

  lost(error: Error): void {
    if (this.down || this.stopped) return;
    this.down = error;
    this.since = Date.now();
    this.options.logger?.warn({ err: error }, 'PostgreSQL is not answering: requests fail at once (503) until it answers again');
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.probes.end();
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    // The probe has its deadline even if the timeout that started it came from unbounded work.
    this.timer = setTimeout(() => unbounded.exit(() => void this.probe()), delayMs);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    this.timer = null;
    let answered = false;
    try {
      const client = boundedClient(await this.probes.connect(), this.options.timeoutMs, new PreparedStatements(0), () => {});
      try {
        await client.query('select 1', []);
        answered = true;
      } finally {
        client.release();
      }
    } catch (error) {
      // A refusal is an answer: requests go through again and get it (a 503 of its own).
      answered = !isSilence(error);
    }
    if (this.stopped) return;
    if (answered) {
      this.options.logger?.info({ after_ms: Date.now() - this.since }, 'PostgreSQL answers again');
      this.down = null;
      return;
    }
    this.schedule(this.options.probeIntervalMs ?? 500);
  }
}
