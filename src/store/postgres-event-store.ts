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

  constructor(private readonly db: Kysely<Database>) {}

  async append(writes: AppendWrite[]): Promise<AppendResult> {
    const sorted = [...writes].sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0));
    const result = await retryOnSerializationFailure(() =>
      this.db.transaction().execute(async (trx) => {
        const revisions: Record<string, number> = {};
        const rows: Array<Record<string, unknown>> = [];
        for (const write of sorted) {
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
        await sql`select pg_advisory_xact_lock(${APPEND_LOCK_KEY.toString()}::bigint)`.execute(trx);
        const inserted = await trx
          .insertInto('events')
          .values(rows as never)
          .returning('global_position')
          .execute();
        const last = Math.max(...inserted.map((r) => r.global_position));
        return { revisions, position: { globalPosition: BigInt(last) } };
      }),
    );
    this.emitter.emit('appended');
    return result;
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
