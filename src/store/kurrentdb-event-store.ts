import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  type AllStreamResolvedEvent,
  type AppendStreamRequest,
  type AppendStreamState,
  BACKWARDS,
  CancelledError,
  DeadlineExceededError,
  END,
  FORWARDS,
  isCommandError,
  type JSONEventData,
  KurrentDBClient,
  type Position,
  type ResolvedEvent,
  START as KURRENT_START,
  StreamNotFoundError,
  streamNameFilter,
  TimeoutError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import { v5 as uuidv5 } from 'uuid';
import type { EventMetadata } from '../events/metadata.js';
import { eventHash, GENESIS_HASH } from './hash-chain.js';
import {
  type AppendOptions,
  type AppendResult,
  type AppendWrite,
  awaitDependencies,
  type Checkpoint,
  CommitOutcomeUnknown,
  type EventStore,
  type ListedStream,
  type NewEvent,
  type ReadStreamOptions,
  type StoredEvent,
  type StreamHeads,
  WrongExpectedVersion,
} from './event-store.js';

/** The streams of the service (ARCHITECTURE.md "Streams and aggregates"); `readAll` sees only these. */
export const SERVICE_STREAM_PREFIXES = ['customer-', 'business-', 'apikey-', 'program-', 'reward-', 'webhook-', 'unique-'];

/** Namespace of the UUIDv5 event ids derived from (stream, type, reference). */
const EVENT_ID_NAMESPACE = 'a3f1c2e4-5b6d-4e7f-8a9b-0c1d2e3f4a5b';

/**
 * `multiStreamAppend` (KurrentDB 25.1+) accepts only string-valued metadata, so the metadata travels
 * as one JSON string under this key; single-stream appends store the same shape so reads decode one way.
 */
const METADATA_PROPERTY = 'loyalty.metadata';

/** How often an `any` append re-reads the stream's head when a concurrent writer moved it. */
const ANY_RETRIES = 50;

export interface KurrentDbEventStoreOptions {
  /** Stream-name prefixes `readAll` returns (server-side filter); default: the service's streams. */
  streamPrefixes?: string[];
}

/**
 * The event store on KurrentDB (EventStoreDB's successor).
 *
 * - Every append states the stream's revision (`streamState`): `any` is resolved to the head read
 *   just before, so the hash chain (`prev_hash`/`hash` in metadata, as in the PostgreSQL adapter)
 *   always links to the event really before it; a concurrent writer makes it re-read and retry.
 * - Several streams are written with `multiStreamAppend`, atomically (server 25.1 or later).
 * - Event ids are UUIDv5 of (stream, type, reference) when the event's data has a `reference`, so
 *   an append retried after a lost answer is a no-op on the server rather than a second event.
 * - `readAll` reads `$all` with a server-side stream-prefix filter; a checkpoint is the commit
 *   position, which the projection runner keeps in its PostgreSQL row with the read-model writes.
 */
export class KurrentDbEventStore implements EventStore {
  /**
   * No transaction spans the log and PostgreSQL: answers are stored after the append
   * (`AppendOptions.receipt` is ignored), and a retry rebuilds a lost one from the log.
   */
  readonly transactionalReceipts = false;
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private readonly prefixes: string[];

  constructor(
    private readonly client: KurrentDBClient,
    options: KurrentDbEventStoreOptions = {},
  ) {
    this.prefixes = options.streamPrefixes ?? SERVICE_STREAM_PREFIXES;
  }

  /** @example KurrentDbEventStore.connect('kurrentdb://localhost:2113?tls=false') */
  static connect(url: string, options?: KurrentDbEventStoreOptions): KurrentDbEventStore {
    return new KurrentDbEventStore(KurrentDBClient.connectionString(url), options);
  }

  close(): Promise<void> {
    return this.client.dispose();
  }

  async append(writes: AppendWrite[], options: AppendOptions = {}): Promise<AppendResult> {
    // The simplest honest `after`: wait for the appends this one was decided on, fail if one did.
    // Appends decided on each other then reach the server one after another.
    await awaitDependencies(writes, options.after);
    // Conditions are read just before the append, not with it: KurrentDB has no way to check a
    // stream it does not write in the same append, so a write to that stream landing in between
    // goes unnoticed (the PostgreSQL adapter checks them at commit).
    await Promise.all(writes.filter((w) => w.events.length === 0 && w.expected !== 'any').map((w) => this.checkCondition(w)));
    const nonEmpty = writes.filter((w) => w.events.length > 0);
    if (nonEmpty.length === 0) return { revisions: {}, position: { globalPosition: 0n } };
    for (let attempt = 1; ; attempt++) {
      const requests = await Promise.all(nonEmpty.map((w) => this.prepare(w)));
      try {
        const result = await this.send(requests, nonEmpty);
        this.emitter.emit('appended');
        return result;
      } catch (error) {
        if (outcomeUnknown(error)) throw new CommitOutcomeUnknown(error);
        if (!(error instanceof WrongExpectedVersionError)) throw error;
        const write = nonEmpty.find((w) => w.stream === error.streamName);
        const mapped = new WrongExpectedVersion(error.streamName, write?.expected ?? 'any', toActual(error.actualState));
        // Only an `any` we pinned ourselves may be retried: the caller asked for no check.
        if (write?.expected !== 'any' || attempt >= ANY_RETRIES) throw mapped;
      }
    }
  }

  private async checkCondition(write: AppendWrite): Promise<void> {
    const [last] = await this.readStream(write.stream, { backwards: true, max: 1 });
    const actual = last ? last.streamPosition : 'no_stream';
    if (actual !== write.expected) throw new WrongExpectedVersion(write.stream, write.expected, actual);
  }

  /** Pins the expected revision, derives ids and chains hashes for one stream's events. */
  private async prepare(write: AppendWrite): Promise<AppendStreamRequest & { first: number }> {
    let revision: number | 'no_stream' = 'no_stream';
    let prevHash = GENESIS_HASH;
    if (write.expected !== 'no_stream') {
      const [last] = await this.readStream(write.stream, { backwards: true, max: 1 });
      if (last) {
        revision = last.streamPosition;
        prevHash = last.metadata.hash ?? GENESIS_HASH;
      }
      if (write.expected !== 'any' && revision !== write.expected) {
        throw new WrongExpectedVersion(write.stream, write.expected, revision);
      }
    }
    const first = revision === 'no_stream' ? 0 : revision + 1;
    const events = write.events.map((event, i) => {
      const id = eventId(write.stream, event);
      const metadata = event.id === id ? event.metadata : { ...event.metadata, event_id: id };
      const hash = eventHash(prevHash, {
        stream_id: write.stream,
        stream_position: first + i,
        event_id: id,
        type: event.type,
        data: event.data,
        metadata: metadata as unknown as Record<string, unknown>,
      });
      const stored = { ...metadata, prev_hash: prevHash, hash };
      prevHash = hash;
      return {
        id,
        contentType: 'application/json',
        type: event.type,
        data: event.data,
        metadata: { [METADATA_PROPERTY]: JSON.stringify(stored) },
      } as JSONEventData;
    });
    const expectedState: AppendStreamState = revision === 'no_stream' ? 'no_stream' : BigInt(revision);
    return { streamName: write.stream, expectedState, events, first };
  }

  private async send(requests: Array<AppendStreamRequest & { first: number }>, writes: AppendWrite[]): Promise<AppendResult> {
    const revisions: Record<string, number> = {};
    for (const r of requests) revisions[r.streamName] = r.first + r.events.length - 1;
    if (requests.length === 1) {
      const only = requests[0]!;
      const result = await this.client.appendToStream(only.streamName, only.events, { streamState: only.expectedState });
      return { revisions, position: { globalPosition: result.position?.commit ?? (await this.positionOf(only.streamName, revisions)) } };
    }
    await this.client.multiStreamAppend(requests.map(({ first: _first, ...r }) => r));
    // The answer's single position is not documented as the last record's; read where each write's
    // last event sits instead, so read-your-writes never waits for less than the whole append.
    const positions = await Promise.all(writes.map((w) => this.positionOf(w.stream, revisions)));
    return { revisions, position: { globalPosition: positions.reduce((a, b) => (a > b ? a : b)) } };
  }

  private async positionOf(stream: string, revisions: Record<string, number>): Promise<bigint> {
    const [event] = await this.readStream(stream, { from: revisions[stream]!, max: 1 });
    if (!event) throw new Error(`stream '${stream}' has no event at revision ${revisions[stream]} right after appending it`);
    return event.position.globalPosition;
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    if (options.from !== undefined && options.from < 0) return [];
    const direction = options.backwards ? BACKWARDS : FORWARDS;
    const fromRevision = options.from !== undefined ? BigInt(options.from) : options.backwards ? END : KURRENT_START;
    const events: StoredEvent[] = [];
    try {
      const read = this.client.readStream(stream, {
        direction,
        fromRevision,
        ...(options.max !== undefined ? { maxCount: options.max } : {}),
      });
      for await (const resolved of read) events.push(toStoredEvent(resolved));
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  /**
   * Reading `$all` forwards from a position includes the event at it, so events at or before
   * `after` are dropped; one extra event is asked for to keep pages full.
   */
  async readAll(after: Checkpoint, max: number): Promise<{ events: StoredEvent[]; checkpoint: Checkpoint }> {
    const from = after.globalPosition;
    const fromPosition: Position | typeof KURRENT_START = from === 0n ? KURRENT_START : { commit: from, prepare: from };
    const events: StoredEvent[] = [];
    const read = this.client.readAll({
      direction: FORWARDS,
      fromPosition,
      maxCount: max + 1,
      filter: streamNameFilter({ prefixes: this.prefixes }),
    });
    for await (const resolved of read) {
      const event = toStoredEvent(resolved);
      if (event.position.globalPosition <= from) continue;
      events.push(event);
      if (events.length === max) break;
    }
    return { events, checkpoint: events.at(-1)?.position ?? after };
  }

  /**
   * One filtered read of `$all` backwards from its end, for one event. Cheap while the service's
   * streams make up most of the log; otherwise the server walks back over the records the filter
   * drops (system events, other applications' streams) until one matches.
   */
  async headPosition(): Promise<Checkpoint> {
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1, filter: streamNameFilter({ prefixes: this.prefixes }) });
    for await (const resolved of read) return { globalPosition: commitOf(resolved) };
    return { globalPosition: 0n };
  }

  /**
   * A filtered forward read of `$all` from `after`: O(events counted), since the server has no
   * count and sends every event (at most `max` + 1 of them).
   */
  async countEvents(after: Checkpoint, options: { max?: number } = {}): Promise<number> {
    return this.count(after, undefined, options.max);
  }

  /** Positions are byte offsets in the server's log, so the events are counted, up to `max`: O(lag). */
  async lag(checkpoint: Checkpoint, head: Checkpoint, options: { max?: number } = {}): Promise<number> {
    if (checkpoint.globalPosition >= head.globalPosition) return 0;
    return this.count(checkpoint, head, options.max);
  }

  private async count(after: Checkpoint, upTo: Checkpoint | undefined, max = Number.POSITIVE_INFINITY): Promise<number> {
    if (max <= 0) return 0;
    const from = after.globalPosition;
    const read = this.client.readAll({
      direction: FORWARDS,
      fromPosition: from === 0n ? KURRENT_START : { commit: from, prepare: from },
      ...(Number.isFinite(max) ? { maxCount: max + 1 } : {}),
      filter: streamNameFilter({ prefixes: this.prefixes }),
    });
    let count = 0;
    for await (const resolved of read) {
      const position = commitOf(resolved);
      if (position <= from) continue;
      if (upTo !== undefined && position > upTo.globalPosition) break;
      if (++count >= max) break;
    }
    return count;
  }

  /**
   * The head first (`headPosition`), then everything is cut at it, so the answer is as of that
   * moment although no snapshot spans the reads.
   * - One stream: read backwards from its end until an event at or before the head (one read of
   *   one event, unless the stream moved since).
   * - A prefix or every stream: one filtered forward read of `$all` up to the head, keeping each
   *   stream's last event: O(events of the streams listed). KurrentDB lists streams otherwise only
   *   through the `$streams` and `$ce-…` system projections (O(streams) and O(streams of the
   *   category) link events), which need projections running; docker-compose.yml runs none
   *   (`KURRENTDB_RUN_PROJECTIONS: None`), and a test server need not either.
   */
  async streamHeads(filter: { stream?: string; prefix?: string } = {}): Promise<StreamHeads> {
    const position = await this.headPosition();
    const head = position.globalPosition;
    if (filter.stream !== undefined) {
      const only = filter.stream;
      if (!this.prefixes.some((p) => only.startsWith(p)) || !only.startsWith(filter.prefix ?? '')) return { position, streams: [] };
      const listed = await this.lastEventAtOrBefore(only, head);
      return { position, streams: listed ? [listed] : [] };
    }
    const prefix = filter.prefix ?? '';
    // The server-side filter: the requested prefix where one of ours covers it, else ours that start with it.
    const prefixes = this.prefixes.some((p) => prefix.startsWith(p)) ? [prefix] : this.prefixes.filter((p) => p.startsWith(prefix));
    const heads = new Map<string, ListedStream>();
    if (prefixes.length > 0 && head > 0n) {
      const read = this.client.readAll({ direction: FORWARDS, fromPosition: KURRENT_START, filter: streamNameFilter({ prefixes }) });
      for await (const resolved of read) {
        const event = toStoredEvent(resolved);
        if (event.position.globalPosition > head) break;
        heads.set(event.streamId, listed(event));
      }
    }
    return { position, streams: [...heads.values()].sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0)) };
  }

  private async lastEventAtOrBefore(stream: string, head: bigint): Promise<ListedStream | undefined> {
    let from: number | undefined;
    for (;;) {
      const page = await this.readStream(stream, { backwards: true, max: from === undefined ? 1 : 100, ...(from === undefined ? {} : { from }) });
      const last = page.find((e) => e.position.globalPosition <= head);
      if (last) return listed(last);
      const oldest = page.at(-1);
      if (!oldest || oldest.streamPosition === 0) return undefined;
      from = oldest.streamPosition - 1;
    }
  }

  onAppended(listener: () => void): () => void {
    this.emitter.on('appended', listener);
    return () => this.emitter.off('appended', listener);
  }
}

/**
 * Whether an append that failed so may still have been written: the call timed out, was cut off
 * or failed without the server saying why. A refusal the server explains (a wrong expected
 * revision, a deleted stream, access denied, not the leader, too large) wrote nothing.
 */
function outcomeUnknown(error: unknown): boolean {
  if (!(error instanceof Error) || !isCommandError(error)) return true;
  return [TimeoutError, DeadlineExceededError, UnavailableError, CancelledError, UnknownError].some((type) => error instanceof type);
}

/** UUIDv5 of (stream, type, reference) when the data carries a reference, so a retried append repeats its ids. */
function eventId(stream: string, event: NewEvent): string {
  const reference = (event.data as { reference?: unknown } | null)?.reference;
  if (typeof reference === 'string') return uuidv5(`${stream}\n${event.type}\n${reference}`, EVENT_ID_NAMESPACE);
  return event.id ?? randomUUID();
}

function listed(event: StoredEvent): ListedStream {
  return { stream: event.streamId, revision: event.streamPosition, lastHash: event.metadata.hash ?? GENESIS_HASH };
}

/** The `$all` commit position of a read event (what `readAll` checkpoints). */
function commitOf(resolved: AllStreamResolvedEvent): bigint {
  const commit = resolved.event?.position?.commit ?? resolved.commitPosition;
  if (commit === undefined) throw new Error(`event ${resolved.event?.id} of '${resolved.event?.streamId}' came without a $all position`);
  return commit;
}

function toActual(state: bigint | 'no_stream' | string): number | 'no_stream' {
  return typeof state === 'bigint' && state >= 0n ? Number(state) : 'no_stream';
}

function toStoredEvent(resolved: ResolvedEvent | AllStreamResolvedEvent): StoredEvent {
  const event = resolved.event!;
  const metadata = decodeMetadata(event.metadata);
  const commit = event.position?.commit ?? resolved.commitPosition;
  if (commit === undefined) throw new Error(`event ${event.id} of '${event.streamId}' came without a $all position`);
  return {
    eventId: event.id,
    streamId: event.streamId,
    streamPosition: Number(event.revision),
    type: event.type,
    data: event.isJson ? event.data : JSON.parse(Buffer.from(event.data as Uint8Array).toString('utf8')),
    metadata,
    recordedAt: new Date(metadata.recorded_at),
    position: { globalPosition: commit },
  };
}

function decodeMetadata(raw: unknown): EventMetadata {
  const value = raw instanceof Uint8Array ? JSON.parse(Buffer.from(raw).toString('utf8')) : raw;
  const packed = (value as Record<string, unknown> | null)?.[METADATA_PROPERTY];
  return (typeof packed === 'string' ? JSON.parse(packed) : value) as EventMetadata;
}
