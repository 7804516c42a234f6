import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { retryOnSerializationFailure } from '../db/retry.js';
import { eventHash } from './hash-chain.js';
import {
  type AppendResult,
  type AppendWrite,
  type Checkpoint,
  type EventStore,
  type ReadStreamOptions,
  type StoredEvent,
  WrongExpectedVersion,
} from './event-store.js';

/**
 * Taken by every append right before it inserts its events and held until it commits, so appends
 * commit one at a time and `global_position` order is commit order. (Identity values are otherwise
 * handed out before commit: a reader past position 11 could miss a 10 that commits later.)
 * Advisory locks are per database, so stores in other databases of one server never wait on it.
 */
export const APPEND_LOCK_KEY = 7_270_612_466_100_531_901n;

/** Most appends one group-commit transaction carries. */
const MAX_BATCH = 100;

interface PendingAppend {
  writes: AppendWrite[];
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
  settled?: boolean;
}

interface EventRow {
  stream_id: string;
  stream_position: number;
  event_id: string;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
}

function settle(pending: PendingAppend, error: unknown, result?: AppendResult): void {
  if (pending.settled) return;
  pending.settled = true;
  if (result) pending.resolve(result);
  else pending.reject(error);
}

function sortByStream(writes: AppendWrite[]): AppendWrite[] {
  return [...writes].sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0));
}

/**
 * The event store on PostgreSQL (server or embedded PGlite).
 *
 * `streams(stream_id, version)` is the optimistic-concurrency gate: an append moves a stream's
 * version with `where version = expected`, so a concurrent writer blocks on the row, then finds the
 * version moved and fails loudly. Streams are locked in name order so multi-stream appends cannot
 * deadlock each other; the append lock comes after them, and its holder waits for nothing else.
 */
export class PostgresEventStore implements EventStore {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private readonly queue: PendingAppend[] = [];
  private flushing = false;

  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Group commit: appends that arrive while a batch is being written wait for the next batch, and
   * a whole batch commits in one transaction (one fsync for many requests). Each append keeps its
   * own expected-revision checks and its own outcome: a conflict rolls back only its savepoint.
   */
  append(writes: AppendWrite[]): Promise<AppendResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ writes: sortByStream(writes), resolve, reject });
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await retryOnSerializationFailure(() => this.commitBatch(batch));
        } catch {
          // Something failed for the batch as a whole (e.g. a duplicate event id): isolate it.
          for (const pending of batch.filter((p) => !p.settled)) {
            await retryOnSerializationFailure(() => this.commitBatch([pending])).catch((error) => settle(pending, error));
          }
        }
        this.emitter.emit('appended');
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * One transaction for the batch. Phase 1 claims each append's stream revisions under its own
   * savepoint (row locks, in stream-name order within an append). Phase 2 takes the append lock
   * and inserts every event of the batch in one statement, so the lock holder waits for nothing.
   */
  private async commitBatch(batch: PendingAppend[]): Promise<void> {
    const outcomes = await this.db.transaction().execute(async (trx) => {
      const rows: EventRow[] = [];
      const claimed: Array<{ pending: PendingAppend; revisions: Record<string, number>; keys: string[] }> = [];
      const failed: Array<{ pending: PendingAppend; error: unknown }> = [];
      for (const [i, pending] of batch.entries()) {
        await sql`savepoint ${sql.raw(`append_${i}`)}`.execute(trx);
        try {
          const { revisions, rows: own } = await this.claim(trx, pending.writes);
          await sql`release savepoint ${sql.raw(`append_${i}`)}`.execute(trx);
          rows.push(...own);
          claimed.push({ pending, revisions, keys: own.map((r) => `${r.stream_id}@${r.stream_position}`) });
        } catch (error) {
          await sql`rollback to savepoint ${sql.raw(`append_${i}`)}`.execute(trx);
          if (!(error instanceof WrongExpectedVersion)) throw error;
          failed.push({ pending, error });
        }
      }
      const positions = new Map<string, number>();
      if (rows.length > 0) {
        await sql`select pg_advisory_xact_lock(${APPEND_LOCK_KEY.toString()}::bigint)`.execute(trx);
        const inserted = await trx
          .insertInto('events')
          .values(rows as never)
          .returning(['global_position', 'stream_id', 'stream_position'])
          .execute();
        for (const r of inserted) positions.set(`${r.stream_id}@${r.stream_position}`, r.global_position);
      }
      return { claimed, failed, positions };
    });
    for (const { pending, error } of outcomes.failed) settle(pending, error);
    for (const { pending, revisions, keys } of outcomes.claimed) {
      const last = keys.length === 0 ? 0 : Math.max(...keys.map((k) => outcomes.positions.get(k) ?? 0));
      settle(pending, null, { revisions, position: { globalPosition: BigInt(last) } });
    }
  }

  /** Claims the revisions of one append's streams and builds its event rows, chained by hash. */
  private async claim(trx: Transaction<Database>, writes: AppendWrite[]): Promise<{ revisions: Record<string, number>; rows: EventRow[] }> {
    const revisions: Record<string, number> = {};
    const rows: EventRow[] = [];
    for (const write of writes) {
      if (write.events.length === 0) continue;
      const { first, lastHash } = await this.claimRevisions(trx, write);
      revisions[write.stream] = first + write.events.length - 1;
      let prevHash = lastHash;
      write.events.forEach((event, i) => {
        const fields = {
          stream_id: write.stream,
          stream_position: first + i,
          event_id: event.id ?? randomUUID(),
          type: event.type,
          data: event.data,
          metadata: event.metadata as unknown as Record<string, unknown>,
        };
        const hash = eventHash(prevHash, fields);
        rows.push({
          ...fields,
          data: JSON.stringify(event.data),
          metadata: JSON.stringify({ ...event.metadata, prev_hash: prevHash, hash }),
          recorded_at: event.metadata.recorded_at,
        });
        prevHash = hash;
      });
      await trx.updateTable('streams').set({ last_hash: prevHash }).where('stream_id', '=', write.stream).execute();
    }
    return { revisions, rows };
  }

  /** Moves the stream's version past the new events; returns the revision of the first one and the hash before it. */
  private async claimRevisions(trx: Transaction<Database>, write: AppendWrite): Promise<{ first: number; lastHash: string }> {
    const n = write.events.length;
    const { stream, expected } = write;
    if (expected === 'no_stream') {
      const row = await trx
        .insertInto('streams')
        .values({ stream_id: stream, version: n - 1 })
        .onConflict((oc) => oc.column('stream_id').doNothing())
        .returning('last_hash')
        .executeTakeFirst();
      if (!row) throw new WrongExpectedVersion(stream, expected, await this.currentVersion(trx, stream));
      return { first: 0, lastHash: row.last_hash };
    }
    if (expected === 'any') {
      const row = await trx
        .insertInto('streams')
        .values({ stream_id: stream, version: n - 1 })
        .onConflict((oc) => oc.column('stream_id').doUpdateSet({ version: sql`streams.version + ${n}` }))
        .returning(['version', 'last_hash'])
        .executeTakeFirstOrThrow();
      return { first: row.version - n + 1, lastHash: row.last_hash };
    }
    const row = await trx
      .updateTable('streams')
      .set({ version: expected + n })
      .where('stream_id', '=', stream)
      .where('version', '=', expected)
      .returning('last_hash')
      .executeTakeFirst();
    if (!row) throw new WrongExpectedVersion(stream, expected, await this.currentVersion(trx, stream));
    return { first: expected + 1, lastHash: row.last_hash };
  }

  private async currentVersion(trx: Transaction<Database>, stream: string): Promise<number | 'no_stream'> {
    const row = await trx.selectFrom('streams').select('version').where('stream_id', '=', stream).executeTakeFirst();
    return row ? row.version : 'no_stream';
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    let query = this.db
      .selectFrom('events')
      .selectAll()
      .where('stream_id', '=', stream)
      .orderBy('stream_position', options.backwards ? 'desc' : 'asc');
    if (options.from !== undefined) {
      query = query.where('stream_position', options.backwards ? '<=' : '>=', options.from);
    }
    if (options.max !== undefined) query = query.limit(options.max);
    return (await query.execute()).map(toStoredEvent);
  }

  /** Appends commit in `global_position` order (see APPEND_LOCK_KEY), so reading past a checkpoint never skips one. */
  async readAll(after: Checkpoint, max: number): Promise<{ events: StoredEvent[]; checkpoint: Checkpoint }> {
    const rows = await this.db
      .selectFrom('events')
      .selectAll()
      .where('global_position', '>', Number(after.globalPosition))
      .orderBy('global_position')
      .limit(max)
      .execute();
    const events = rows.map(toStoredEvent);
    return { events, checkpoint: events.at(-1)?.position ?? after };
  }

  onAppended(listener: () => void): () => void {
    this.emitter.on('appended', listener);
    return () => this.emitter.off('appended', listener);
  }
}

function toStoredEvent(row: {
  event_id: string;
  stream_id: string;
  stream_position: number;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  recorded_at: Date;
  global_position: number;
}): StoredEvent {
  return {
    eventId: row.event_id,
    streamId: row.stream_id,
    streamPosition: row.stream_position,
    type: row.type,
    data: row.data,
    metadata: row.metadata as unknown as StoredEvent['metadata'],
    recordedAt: row.recorded_at,
    position: { globalPosition: BigInt(row.global_position) },
  };
}
