import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EventRow, StreamHead, StreamUpdate } from './append-plan.js';
import type { AppendReceipt } from './event-store.js';

/**
 * Taken by every append right before it inserts its events and held until it commits, so appends
 * commit one at a time and `global_position` order is commit order. (Identity values are otherwise
 * handed out before commit: a reader past position 11 could miss a 10 that commits later.)
 * Advisory locks are per database, so stores in other databases of one server never wait on it.
 */
export const APPEND_LOCK_KEY = 7_270_612_466_100_531_901n;

/**
 * The PostgreSQL channel that tells worker processes the log grew. A store told to signal sends it
 * from the append's own statement, so it costs no round trip and arrives when the events commit.
 */
export const APPENDED_CHANNEL = 'loyalty_appended';

// The batch's statements have fixed texts (no per-call query building), whatever the batch size.

/**
 * Locks the streams the batch writes (`for update`) and those it only has conditions on
 * (`for share`: writers elsewhere wait until this batch commits, other batches' conditions do not),
 * each group in name order, so concurrent batches cannot deadlock over the streams they write.
 * (Across processes, one batch writing A with a condition on B and another writing B with a
 * condition on A can: PostgreSQL aborts one and the store runs it again.)
 */
const LOCK_STREAMS = `
  select * from (select stream_id, version, last_hash from streams
                 where stream_id = any($1::text[]) order by stream_id for update) written
  union all
  select * from (select stream_id, version, last_hash from streams
                 where stream_id = any($2::text[]) order by stream_id for share) conditioned`;

/**
 * Moves every written stream (updates the locked rows, inserts the new ones), then takes the append
 * lock and inserts every event of the batch, in one statement. A stream another session created
 * after the batch read it (`created` waits for that session if it has not committed yet) is
 * skipped; the count comes out short, neither the lock nor the events insert runs, and the caller
 * rolls back and retries. The streams come as arrays: PostgreSQL plans an `unnest` of parameters
 * for 10 rows and probes the primary key; for a `jsonb_to_recordset` it plans 100 and, on a table
 * of a few thousand streams, hash-joined a scan of all of them (docs/performance.md).
 */
const WRITE_BATCH_TEXT = `
  with moved as (
    select * from unnest($1::text[], $5::int8[], $6::text[], $7::bool[]) as s(stream_id, version, last_hash, is_new)
  ), updated as (
    update streams set version = moved.version, last_hash = moved.last_hash
    from moved where not moved.is_new and streams.stream_id = moved.stream_id
    returning 1
  ), created as (
    insert into streams (stream_id, version, last_hash)
    select stream_id, version, last_hash from moved where is_new
    on conflict (stream_id) do nothing
    returning 1
  ), claimed as (
    select (select count(*) from updated) + (select count(*) from created) as streams
  ), append_lock as (
    select pg_advisory_xact_lock($2::bigint) from claimed where streams = $3
  ), inserted as (
    insert into events (stream_id, stream_position, event_id, type, data, metadata, recorded_at)
    -- a JSON null in the recordset reads as SQL null: keep it a JSON null, as the event's data was
    select e.stream_id, e.stream_position, e.event_id, e.type, coalesce(e.data, 'null'::jsonb), e.metadata, e.recorded_at
    from append_lock, rows from (jsonb_to_recordset($4::jsonb) as (
      stream_id text, stream_position bigint, event_id uuid, type text, data jsonb, metadata jsonb, recorded_at timestamptz
    )) with ordinality as e
    order by e.ordinality
    returning global_position, stream_id, stream_position
  )
  select claimed.streams, inserted.* from claimed left join inserted on true`;

const WRITE_BATCH = WRITE_BATCH_TEXT;
/** The same, with the append signal (`APPENDED_CHANNEL`) sent once the events are in: delivered at commit. */
const WRITE_BATCH_SIGNALLED = WRITE_BATCH_TEXT.replace(
  'select pg_advisory_xact_lock($2::bigint) from claimed where streams = $3',
  `select pg_advisory_xact_lock($2::bigint), pg_notify('${APPENDED_CHANNEL}', '') from claimed where streams = $3`,
);

/** Which of the streams exist now: asked after the append lock, so every earlier commit shows. */
const EXISTING_STREAMS = `select stream_id from streams where stream_id = any($1::text[])`;

type Executor = Pick<Kysely<Database>, 'executeQuery'>;

/** Reads and locks the batch's streams; a stream without a row is absent from the map. */
export async function lockStreams(trx: Executor, written: string[], conditioned: string[]): Promise<Map<string, StreamHead>> {
  const { rows } = await trx.executeQuery<{ stream_id: string; version: number | string; last_hash: string }>(
    CompiledQuery.raw(LOCK_STREAMS, [written, conditioned]),
  );
  return new Map(rows.map((r) => [r.stream_id, { version: Number(r.version), lastHash: r.last_hash }]));
}

/**
 * Writes the batch's stream rows and events. Returns each event's global position by
 * `stream@position`, or `null` when a stream the batch creates was created concurrently.
 */
export async function writeBatch(trx: Executor, streams: StreamUpdate[], rows: EventRow[], signal = false): Promise<Map<string, number> | null> {
  const result = await trx.executeQuery<{ streams: number | string; global_position: number | null; stream_id: string; stream_position: number }>(
    CompiledQuery.raw(signal ? WRITE_BATCH_SIGNALLED : WRITE_BATCH, [
      streams.map((s) => s.stream_id),
      APPEND_LOCK_KEY.toString(),
      streams.length,
      JSON.stringify(rows),
      streams.map((s) => s.version),
      streams.map((s) => s.last_hash),
      streams.map((s) => s.is_new),
    ]),
  );
  if (Number(result.rows[0]?.streams) !== streams.length) return null;
  return new Map(result.rows.map((r) => [`${r.stream_id}@${Number(r.stream_position)}`, Number(r.global_position)]));
}

export async function existingStreams(trx: Executor, streams: string[]): Promise<string[]> {
  const { rows } = await trx.executeQuery<{ stream_id: string }>(CompiledQuery.raw(EXISTING_STREAMS, [streams]));
  return rows.map((r) => r.stream_id);
}

/**
 * Marks each request's idempotency record done with its answer, in the append's transaction (see
 * `AppendOptions.receipt`); only records still held by the attempt, so an answer is stored once.
 * Arrays rather than one JSON document of rows: PostgreSQL plans an `unnest` of parameters for 10
 * rows and a `jsonb_to_recordset` for 100, and at 100 it scanned the whole table of records into a
 * hash join (docs/performance.md) until the table was large.
 */
const STORE_RECEIPTS = `
  update idempotency_keys k
  set state = 'done', response_status = r.status, response_headers = r.headers, response_body = r.body
  from unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::jsonb[], $6::text[]) as r(business_id, key, token, status, headers, body)
  where k.business_id = r.business_id and k.key = r.key and k.state = 'running' and k.claim_token = r.token
  returning k.business_id, k.key`;

/** Stores the receipts; returns those whose attempt no longer holds its record. */
export async function storeReceipts(trx: Executor, receipts: AppendReceipt[]): Promise<AppendReceipt[]> {
  const column = <T>(pick: (r: AppendReceipt) => T) => receipts.map(pick);
  const { rows: stored } = await trx.executeQuery<{ business_id: string; key: string }>(
    CompiledQuery.raw(STORE_RECEIPTS, [
      column((r) => r.businessId),
      column((r) => r.key),
      column((r) => r.token),
      column((r) => r.status),
      column((r) => JSON.stringify(r.headers)),
      column((r) => r.body),
    ]),
  );
  const done = new Set(stored.map((r) => `${r.business_id}\u0000${r.key}`));
  return receipts.filter((r) => !done.has(`${r.businessId}\u0000${r.key}`));
}
