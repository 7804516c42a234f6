import { randomBytes } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatabaseHandle } from './database.js';

/** How often a mark whose session was lost tries to take it again. */
const RETAKE_MS = 1_000;

/**
 * This process, as the database sees it: a session advisory lock on a random key, held on a
 * session of its own for the process's life. A claim (an Idempotency-Key being answered, a webhook
 * message being delivered) records the key as its holder, and another process may take the claim
 * over as soon as the lock is gone (`holderGone`) instead of waiting for its lease: PostgreSQL
 * drops a session's locks when the process dies, kill -9 included, or its connection is lost.
 * Losing the session only lets others take this process's claims early, which the claims' tokens
 * make safe; the mark takes the lock again on a new session.
 *
 * On PGlite the one session is the store's own and one process owns it: the lock lives as long as
 * the process, and claims left by an earlier process are gone at once.
 */
export class ProcessMark {
  /** The lock's key, a positive 63-bit integer in decimal (a `bigint` column's value). */
  readonly id = (randomBytes(8).readBigUInt64BE() >> 1n).toString();
  private client: pg.Client | undefined;
  private retake: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    private readonly handle: DatabaseHandle,
    private readonly logger: Logger | undefined,
  ) {}

  static async take(handle: DatabaseHandle, logger?: Logger): Promise<ProcessMark> {
    const mark = new ProcessMark(handle, logger);
    if (handle.kind === 'pglite' || !handle.url) await sql`select pg_advisory_lock(${mark.id}::bigint)`.execute(handle.db);
    else await mark.lockOnOwnSession();
    return mark;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retake);
    await this.client?.end().catch(() => {});
  }

  private async lockOnOwnSession(): Promise<void> {
    const client = new pg.Client({ connectionString: this.handle.url, connectionTimeoutMillis: 5_000, keepAlive: true });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query('select pg_advisory_lock($1::bigint)', [this.id]);
    this.client = client;
  }

  private lost(client: pg.Client): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    this.logger?.warn('lost the session that marks this process alive; taking it again');
    const again = () => {
      this.retake = setTimeout(() => {
        if (this.closed) return;
        this.lockOnOwnSession().catch(again);
      }, RETAKE_MS);
    };
    again();
  }
}

/**
 * Whether the process that holds a claim (the `holder` column, a `ProcessMark` id) is gone: no
 * session of this database holds its advisory lock. False for a claim without a holder (made
 * before holders were recorded): it waits for its lease.
 */
export function holderGone(holder: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(${holder} is not null and not exists (
    select 1 from pg_locks l
     where l.locktype = 'advisory' and l.objsubid = 1
       and l.database = (select oid from pg_database where datname = current_database())
       and l.classid::bigint = (${holder} >> 32) and l.objid::bigint = (${holder} & 4294967295)))`;
}
