import { EventEmitter } from 'node:events';
import { type AliasedRawBuilder, type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import { compiledOnce, precompiled } from '../db/precompiled-query.js';
import type { Database } from '../db/schema.js';
import { type LogDatabase, withLogTables } from './log-tables.js';
import { retryOnSerializationFailure } from '../db/retry.js';
import { type BatchPlan, planBatch } from './append-plan.js';
import { existingStreams, lockStreams, storeReceipts, writeBatch } from './append-statements.js';
import {
  AnswerAlreadyStored,
  type AppendOptions,
  type AppendReceipt,
  type AppendResult,
  type AppendWrite,
  type Checkpoint,
  CommitOutcomeUnknown,
  type EventStore,
  type ProjectionSourceEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type SnapshotAndEvents,
  type StoredEvent,
  type StreamHeads,
} from './event-store.js';
import { GroupCommit, type GroupCommitOptions, type PendingAppend, plannedAppends, settle, touchedBy } from './group-commit.js';

export { APPEND_LOCK_KEY } from './append-statements.js';

// Measured with 256 concurrent appenders on the 2-core bench machine: a second batch in flight
// adds ~20% when batches are full; with small batches it only made latency worse.
const DEFAULTS: GroupCommitOptions = { maxBatch: 100, maxInFlight: 2, pipelineFrom: 50 };

/** Rolls a batch back to run it again; retried like the serialization failure it is. */
class StreamChangedConcurrently extends Error {
  readonly code = '40001';
  constructor() {
    super('a stream the batch creates, or has a no_stream condition on, was created concurrently');
  }
}

/**
 * The event store on PostgreSQL (server or embedded PGlite).
 *
 * Group commit: concurrent appends are batched into one transaction (one fsync for many requests),
 * each keeping its own expected-revision checks and its own outcome. A batch costs the same few
 * statements whatever its size: BEGIN; lock its streams (`streams` rows, in name order) and read
 * their versions and hashes; decide every append in JS, in queue order, and chain the hashes;
 * move the streams, take the append lock and insert every event in one statement; COMMIT. While
 * one batch commits the next one claims its streams (see `GroupCommit`). A batch takes its appends
 * from the queue only once it holds a connection, so on PGlite (one connection) the next batch
 * keeps filling up while the one before commits.
 *
 * `streams(stream_id, version, last_hash)` is the optimistic-concurrency gate: a writer elsewhere
 * blocks on the locked row, then finds the version moved and fails loudly.
 */
export class PostgresEventStore implements EventStore {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private readonly groupCommit: GroupCommit;
  private readonly redecides: boolean;
  private readonly signals: boolean;
  /**
   * Answers are stored in the append's transaction (`EventStore.transactionalReceipts`). Set to
   * false, the adapter ignores `AppendOptions.receipt`, so the service stores each answer after
   * its append, as on KurrentDB: the suite runs that path on a real PostgreSQL log this way.
   */
  transactionalReceipts = true;

  /**
   * `redecide`: honour `AppendOptions.redecide` (decide appends again inside their batch). Only on a
   * server: a decision may read through the pool while the batch holds a connection, which on
   * PGlite's one connection would wait for ever; and there no other process moves its streams.
   */
  private readonly db: Kysely<LogDatabase>;
  /** `readAll`'s two statements (with the whole metadata, or with what projectors read of it), built once: the projections read on every batch. */
  private readonly readAllWhole: ReturnType<typeof readAllQuery<Parameters<typeof toStoredEvent>[0]>>;
  private readonly readAllForProjection: ReturnType<typeof readAllQuery<Parameters<typeof toProjectionSourceEvent>[0]>>;
  /** `readStreamFromSnapshot`'s statement, compiled once. */
  private readonly fromSnapshot: ReturnType<typeof compiledOnce<'stream' | 'version'>>;

  /** `signal`: every batch that writes events sends `APPENDED_CHANNEL` (for workers in other processes). */
  constructor(db: Kysely<Database>, options: Partial<GroupCommitOptions> & { redecide?: boolean; signal?: boolean } = {}) {
    this.db = withLogTables(db);
    this.readAllWhole = readAllQuery<Parameters<typeof toStoredEvent>[0]>(this.db, [sql`metadata`.as('metadata')]);
    // Two fields out of the metadata's dozen: PostgreSQL sends, and node-postgres parses, no JSON for it.
    this.readAllForProjection = readAllQuery<Parameters<typeof toProjectionSourceEvent>[0]>(this.db, [
      sql`metadata->>'business_id'`.as('business_id'),
      sql`(metadata->>'event_version')::int`.as('event_version'),
    ]);
    this.fromSnapshot = compiledOnce<'stream' | 'version'>((param) => snapshotAndEventsQuery(param('stream'), param('version')).compile(this.db));
    this.redecides = options.redecide ?? false;
    this.signals = options.signal ?? false;
    this.groupCommit = new GroupCommit((take, claimed) => this.commit(take, claimed), { ...DEFAULTS, ...options });
  }

  append(writes: AppendWrite[], options: AppendOptions = {}): Promise<AppendResult> {
    return this.groupCommit.add(
      [...writes].sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0)),
      { after: options.after, redecide: this.redecides ? options.redecide : undefined, receipt: this.transactionalReceipts ? options.receipt : undefined },
    );
  }

  private async commit(take: () => PendingAppend[], claimed: () => void): Promise<void> {
    let batch: PendingAppend[] | undefined;
    let committing = false;
    try {
      const settleBatch = await retryOnSerializationFailure(() =>
        this.db.transaction().execute(async (trx) => {
          committing = false;
          batch ??= take();
          const settleBatch = await this.commitBatch(trx, batch, claimed);
          committing = true;
          return settleBatch;
        }),
      );
      settleBatch();
    } catch (error) {
      claimed();
      if (!batch) throw error; // no connection: GroupCommit fails the batch
      if (committing && !refusedByServer(error)) {
        // The COMMIT went out and no answer came back: running the appends again could apply them twice.
        for (const pending of batch) settle(pending, new CommitOutcomeUnknown(error));
        this.emitter.emit('appended');
        return;
      }
      // Something failed for the batch as a whole (e.g. a duplicate event id): isolate it.
      for (const pending of batch.filter((p) => !p.settled)) {
        await retryOnSerializationFailure(() => this.db.transaction().execute((trx) => this.commitBatch(trx, [pending], () => {})))
          .then((settleBatch) => settleBatch())
          .catch((error) => settle(pending, error));
      }
    }
    this.emitter.emit('appended');
  }

  /** Decides and writes one batch in `trx`; returns what settles its appends once `trx` has committed. */
  private async commitBatch(trx: Transaction<LogDatabase>, appends: PendingAppend[], claimed: () => void): Promise<() => void> {
    const { live: batch, planned } = plannedAppends(appends);
    const { written, read } = touchedBy(batch);
    const found = await lockStreams(trx, [...written], [...read]);
    const readCommitted = (stream: string, from: number) => readStreamIn(trx, stream, { from });
    const plan = await planBatch(planned, found, readCommitted, new Set([...written, ...read]));
    for (const [i, writes] of plan.redecided) batch[i]!.writes = writes;
    claimed();
    const receipts = plan.outcomes.flatMap((outcome, i) => (outcome.ok ? [batch[i]!.receipt?.()] : [])).filter((r): r is AppendReceipt => r !== undefined);
    if (receipts.length > 0) {
      const answered = await storeReceipts(trx, receipts);
      // Another attempt of that request committed first: this one must write nothing. Alone in
      // its transaction it fails with that; in a batch, the batch is run again append by append.
      if (answered.length > 0) throw batch.length === 1 ? new AnswerAlreadyStored(answered[0]!.key) : new Error('a request of the batch was already answered');
    }
    let positions = new Map<string, number>();
    if (plan.rows.length > 0) {
      const inserted = await writeBatch(trx, plan.streams, plan.rows, this.signals);
      if (!inserted) throw new StreamChangedConcurrently();
      positions = inserted;
      const mustBeAbsent = plan.outcomes.flatMap((o) => (o.ok ? o.noStreamConditions : []));
      if (mustBeAbsent.length > 0 && (await existingStreams(trx, mustBeAbsent)).length > 0) throw new StreamChangedConcurrently();
    }
    return () => settleAll(batch, plan, positions);
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    return readStreamIn(this.db, stream, options);
  }

  async readStreamFromSnapshot(stream: string, stateVersion: number): Promise<SnapshotAndEvents> {
    const rows = (await this.db.executeQuery<SnapshotOrEventRow>(this.fromSnapshot((name) => (name === 'stream' ? stream : stateVersion)))).rows;
    const snapshot = rows[0]?.part === 0 ? { state: rows[0].data, revision: rows[0].stream_position } : null;
    const events = (snapshot ? rows.slice(1) : rows).map(
      (row): RecordedEvent => ({
        streamPosition: row.stream_position,
        type: row.type!,
        data: row.data,
        ...(row.event_version === null ? {} : { metadata: { event_version: row.event_version } }),
        recordedAt: row.recorded_at!,
      }),
    );
    return { snapshot, events };
  }

  /** Appends commit in `global_position` order (see APPEND_LOCK_KEY), so reading past a checkpoint never skips one. */
  async readAll(after: Checkpoint, max: number, options: { metadata: 'projection' }): Promise<{ events: ProjectionSourceEvent[]; checkpoint: Checkpoint }>;
  async readAll(after: Checkpoint, max: number, options?: ReadAllOptions): Promise<{ events: StoredEvent[]; checkpoint: Checkpoint }>;
  async readAll(after: Checkpoint, max: number, options: ReadAllOptions = {}): Promise<{ events: Array<StoredEvent | ProjectionSourceEvent>; checkpoint: Checkpoint }> {
    const at = { after: Number(after.globalPosition), max };
    const events = options.metadata === 'projection' ? (await this.readAllForProjection(at)).map(toProjectionSourceEvent) : (await this.readAllWhole(at)).map(toStoredEvent);
    return { events, checkpoint: events.at(-1)?.position ?? after };
  }

  /** `max(global_position)`: one look at the end of the primary key's index. */
  async headPosition(): Promise<Checkpoint> {
    return headOf(this.db);
  }

  /** `count(*)` of the index range after `after` (O(events counted), at most `max` with one). */
  async countEvents(after: Checkpoint, options: { max?: number } = {}): Promise<number> {
    const matching = this.db.selectFrom('events').select('global_position').where('global_position', '>', Number(after.globalPosition));
    const row = await this.db
      .selectFrom((options.max === undefined ? matching : matching.limit(options.max)).as('e'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Positions are numbers taken one after another, so the lag is their difference: no query. */
  async lag(checkpoint: Checkpoint, head: Checkpoint): Promise<number> {
    return Math.max(0, Number(head.globalPosition - checkpoint.globalPosition));
  }

  /**
   * The `streams` rows (`version`, `last_hash`: the store's own record, kept apart from the events)
   * and the head, in one repeatable-read snapshot. O(streams listed); a prefix scans `streams`.
   */
  async streamHeads(filter: { stream?: string; prefix?: string } = {}): Promise<StreamHeads> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const position = await headOf(trx);
        let query = trx.selectFrom('streams').select(['stream_id', 'version', 'last_hash']);
        if (filter.stream !== undefined) query = query.where('stream_id', '=', filter.stream);
        if (filter.prefix) query = query.where('stream_id', 'like', `${filter.prefix.replace(/[\\%_]/g, '\\$&')}%`);
        const rows = await query.execute();
        const streams = rows.map((r) => ({ stream: r.stream_id, revision: Number(r.version), lastHash: r.last_hash }));
        return { position, streams: streams.sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0)) };
      });
  }

  onAppended(listener: () => void): () => void {
    this.emitter.on('appended', listener);
    return () => this.emitter.off('appended', listener);
  }
}

/** The events after a position, oldest first, at most `max`, with `metadata` columns as given. */
function readAllQuery<Row>(db: Kysely<LogDatabase>, metadata: Array<AliasedRawBuilder<unknown, string>>) {
  return precompiled<Row, 'after' | 'max', LogDatabase>(db, (param) =>
    db
      .selectFrom('events')
      .select(['global_position', 'stream_id', 'stream_position', 'event_id', 'type', 'data', 'recorded_at', ...metadata])
      .where('global_position', '>', param('after'))
      .orderBy('global_position')
      .limit(param('max')),
  );
}

/** A row of `snapshotAndEventsQuery`: the snapshot (`part` 0: its revision and state), then the events (`part` 1). */
interface SnapshotOrEventRow {
  part: 0 | 1;
  stream_position: number;
  type: string | null;
  data: unknown;
  recorded_at: Date | null;
  event_version: number | null;
}

/**
 * A stream's snapshot of a state version, if any, and its events after it, ordered: one statement
 * where a cold load sent two. The snapshot travels as a first row in the events' columns. Of an
 * event's metadata only what decoding needs (`event_version`): the rest, with its hash chain, is
 * most of a row's bytes, and a fold reads none of it.
 */
function snapshotAndEventsQuery(stream: unknown, version: unknown) {
  return sql<SnapshotOrEventRow>`
    with snapshot as (
      select revision, state from aggregate_snapshots where stream_id = ${stream} and state_version = ${version}
    )
    select 0 as part, revision as stream_position, null::text as type, state as data, null::timestamptz as recorded_at, null::int as event_version
      from snapshot
    union all
    select 1, stream_position, type, data, recorded_at, (metadata->>'event_version')::int
      from events
      where stream_id = ${stream} and stream_position > coalesce((select revision from snapshot), -1)
    order by part, stream_position`;
}

/** Whether PostgreSQL answered with an error (so the transaction rolled back), rather than not answering at all. */
function refusedByServer(error: unknown): boolean {
  return typeof (error as { code?: unknown })?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);
}

/** A stream's events, read with `db` (the store's pool, or a batch's transaction). */
async function readStreamIn(db: Kysely<LogDatabase>, stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
  let query = db
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

async function headOf(db: Kysely<LogDatabase>): Promise<Checkpoint> {
  const row = await db.selectFrom('events').select((eb) => eb.fn.max('global_position').as('head')).executeTakeFirst();
  return { globalPosition: BigInt(row?.head ?? 0) };
}

/** An event's row of `events`, whatever its metadata columns. */
interface EventRow {
  event_id: string;
  stream_id: string;
  stream_position: number;
  type: string;
  data: unknown;
  recorded_at: Date;
  global_position: number;
}

/** A row of the projection read: the event with its business and data version for metadata. */
const toProjectionSourceEvent = (row: EventRow & { business_id: string; event_version: number }): ProjectionSourceEvent =>
  eventOf(row, { business_id: row.business_id, event_version: row.event_version });

const toStoredEvent = (row: EventRow & { metadata: Record<string, unknown> }): StoredEvent => eventOf(row, row.metadata as unknown as StoredEvent['metadata']);

function eventOf<M>(row: EventRow, metadata: M) {
  return {
    eventId: row.event_id,
    streamId: row.stream_id,
    streamPosition: row.stream_position,
    type: row.type,
    data: row.data,
    metadata,
    recordedAt: row.recorded_at,
    position: { globalPosition: BigInt(row.global_position) },
  };
}

function settleAll(batch: PendingAppend[], plan: BatchPlan, positions: Map<string, number>): void {
  plan.outcomes.forEach((outcome, i) => {
    const pending = batch[i]!;
    if (!outcome.ok) return settle(pending, outcome.error);
    const last = Math.max(0, ...outcome.rows.map((r) => positions.get(`${r.stream_id}@${r.stream_position}`) ?? 0));
    settle(pending, null, { revisions: outcome.revisions, position: { globalPosition: BigInt(last) } });
  });
}
