import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { retryOnSerializationFailure } from '../db/retry.js';
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
 * The event store on PostgreSQL (server or embedded PGlite).
 *
 * `streams(stream_id, version)` is the optimistic-concurrency gate: an append moves a stream's
 * version with `where version = expected`, so a concurrent writer blocks on the row, then finds the
 * version moved and fails loudly. Streams are locked in name order so multi-stream appends cannot
 * deadlock each other.
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
          const first = await this.claimRevisions(trx, write);
          revisions[write.stream] = first + write.events.length - 1;
          write.events.forEach((event, i) =>
            rows.push({
              stream_id: write.stream,
              stream_position: first + i,
              event_id: event.id ?? randomUUID(),
              type: event.type,
              data: JSON.stringify(event.data),
              metadata: JSON.stringify(event.metadata),
              recorded_at: event.metadata.recorded_at,
            }),
          );
        }
        const inserted = await trx
          .insertInto('events')
          .values(rows as never)
          .returning(['transaction_id', 'global_position'])
          .execute();
        const last = inserted.reduce((max, r) => (r.global_position > max.global_position ? r : max));
        return {
          revisions,
          position: { transactionId: BigInt(last.transaction_id), globalPosition: BigInt(last.global_position) },
        };
      }),
    );
    this.emitter.emit('appended');
    return result;
  }

  /** Moves the stream's version past the new events; returns the revision of the first one. */
  private async claimRevisions(trx: Transaction<Database>, write: AppendWrite): Promise<number> {
    const n = write.events.length;
    const { stream, expected } = write;
    if (expected === 'no_stream') {
      const row = await trx
        .insertInto('streams')
        .values({ stream_id: stream, version: n - 1 })
        .onConflict((oc) => oc.column('stream_id').doNothing())
        .returning('version')
        .executeTakeFirst();
      if (!row) throw new WrongExpectedVersion(stream, expected, await this.currentVersion(trx, stream));
      return 0;
    }
    if (expected === 'any') {
      const row = await trx
        .insertInto('streams')
        .values({ stream_id: stream, version: n - 1 })
        .onConflict((oc) => oc.column('stream_id').doUpdateSet({ version: sql`streams.version + ${n}` }))
        .returning('version')
        .executeTakeFirstOrThrow();
      return row.version - n + 1;
    }
    const row = await trx
      .updateTable('streams')
      .set({ version: expected + n })
      .where('stream_id', '=', stream)
      .where('version', '=', expected)
      .returning('version')
      .executeTakeFirst();
    if (!row) throw new WrongExpectedVersion(stream, expected, await this.currentVersion(trx, stream));
    return expected + 1;
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

  /**
   * Identity values become visible out of commit order, so `global_position > last` would skip an
   * event whose transaction commits after a later-numbered one. Instead read only rows whose
   * transaction has finished (older than the snapshot's xmin) in (transaction_id, global_position)
   * order: no transaction can later add a row below that horizon.
   */
  async readAll(after: Checkpoint, max: number): Promise<{ events: StoredEvent[]; checkpoint: Checkpoint }> {
    const rows = await this.db
      .selectFrom('events')
      .selectAll()
      .where(
        sql<boolean>`(transaction_id, global_position) > (${after.transactionId.toString()}::xid8, ${after.globalPosition.toString()}::bigint)`,
      )
      .where(sql<boolean>`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`)
      .orderBy('transaction_id')
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
  transaction_id: string;
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
    position: { transactionId: BigInt(row.transaction_id), globalPosition: BigInt(row.global_position) },
  };
}
