import type { EventMetadata } from '../events/metadata.js';

/**
 * The event store port. Adapters: `postgres-event-store.ts` (PostgreSQL server and embedded
 * PGlite) and `kurrentdb-event-store.ts`. Every adapter passes `test/store/event-store.contract.ts`.
 * Everything outside `src/store` learns about the log through it (the PostgreSQL adapter's tables
 * are its own business).
 */
export interface EventStore {
  /**
   * Whether the adapter stores a request's answer in the append's own transaction
   * (`AppendOptions.receipt`): true on PostgreSQL, false on KurrentDB (no transaction spans the log
   * and PostgreSQL). Without it, the answer is stored after the append, and a retry that takes over
   * an Idempotency-Key whose answer never got stored looks for the earlier attempt's events in the
   * log first (their metadata carries the key; `src/commands/earlier-attempt.ts`).
   */
  readonly transactionalReceipts: boolean;
  /**
   * Appends to several streams atomically: all writes succeed or none does.
   *
   * A write without events and with a numeric or `no_stream` `expected` is a **condition**: the
   * append fails with `WrongExpectedVersion` (naming that stream, `expected` and the revision it
   * is at) unless the stream is at that revision, and the stream is not modified. So a change
   * decided on another stream's state it holds in memory (a customer's earn on the business's
   * program) can skip reading that stream and still fail if it moved. A write without events and
   * with `any` checks nothing and does nothing. An append of conditions only writes nothing and
   * answers `{ revisions: {}, position: START }`.
   *
   * How strongly a condition holds depends on the adapter: the PostgreSQL one checks it at commit
   * (no commit of that stream orders between the check and this append's events in `readAll`);
   * the KurrentDB one reads the stream just before appending, which is not atomic with the append.
   *
   * `after` names appends (promises `append` returned on this store) whose state this one was
   * decided on before they committed: it fails with `DependencyFailed` (a `WrongExpectedVersion`),
   * writing nothing, if any of them fails. Its own expected revisions cannot prove that: a writer
   * elsewhere may have taken the revision a failed dependency would have produced.
   */
  append(writes: AppendWrite[], options?: AppendOptions): Promise<AppendResult>;
  /** Events of one stream in order (or newest first with `backwards`). */
  readStream(stream: string, options?: ReadStreamOptions): Promise<StoredEvent[]>;
  /**
   * Optional, for a store that keeps the aggregates' snapshots beside its log (the PostgreSQL
   * adapter: `aggregate_snapshots` in the same database): the stream's snapshot of `stateVersion`
   * (null when it has none) and its events after it (all of them without one), in one round trip,
   * each with what a fold reads of it. A cold load otherwise reads the snapshot, then the events:
   * two (`loadAggregate`).
   */
  readStreamFromSnapshot?(stream: string, stateVersion: number): Promise<SnapshotAndEvents>;
  /**
   * Committed events after `after`, in a total order that never changes once read: an event that
   * commits late is never ordered before one already returned, so a reader that checkpoints
   * `checkpoint` and calls again sees every event exactly once.
   */
  readAll(after: Checkpoint, max: number, options: { metadata: 'projection' }): Promise<{ events: ProjectionSourceEvent[]; checkpoint: Checkpoint }>;
  readAll(after: Checkpoint, max: number, options?: ReadAllOptions): Promise<{ events: StoredEvent[]; checkpoint: Checkpoint }>;
  /** Position of the last event `readAll` returns now; `START` while there is none. */
  headPosition(): Promise<Checkpoint>;
  /**
   * How many events `readAll` returns after `after`: exactly, or `max` when there are at least
   * `max` (a bound on the work where the store has to read them to count them).
   */
  countEvents(after: Checkpoint, options?: { max?: number }): Promise<number>;
  /**
   * How far `checkpoint` is behind `head` (a `headPosition`) in events, for lag gauges that are
   * polled often: the number of events after `checkpoint` up to `head`, or more, never fewer
   * (0 when `checkpoint` is at or past `head`). The PostgreSQL adapter subtracts positions without
   * a query (a rolled-back append leaves positions unused, which count too); the KurrentDB
   * adapter, whose positions are byte offsets, counts the events and stops at `max`.
   */
  lag(checkpoint: Checkpoint, head: Checkpoint, options?: { max?: number }): Promise<number>;
  /**
   * Where streams end, as of one moment: the log's head `position` then, and for every stream with
   * an event at or before it, the revision and hash of its last such event. Only the streams
   * `readAll` covers, sorted by name; `stream` names one stream, `prefix` keeps those whose name
   * starts with it. `loyalty audit` checks the hash chains it reads against these heads.
   */
  streamHeads(filter?: { stream?: string; prefix?: string }): Promise<StreamHeads>;
  /** Called after every successful append in this process, to wake readers without polling. */
  onAppended(listener: () => void): () => void;
}

export interface AppendOptions {
  after?: Array<Promise<AppendResult>>;
  /**
   * Decides the append again when a stream it writes or has a condition on has moved since it was
   * decided (another process wrote), or when an append named in `after` failed: the adapter calls
   * it while it holds those streams, so the new decision cannot be overtaken, and appends what it
   * returns instead. `read` gives the events of a stream from a revision as the append will find
   * them (committed, and those of appends ordered before it). A refusal it throws (a business
   * error) fails the append with that error. Adapters that cannot hold streams ignore it; the
   * append then fails as without it.
   */
  redecide?: Redecide;
  /**
   * The answer of the request that made this append, built from the writes as finally decided (so
   * after any `redecide`): adapters with a transaction around the append store it in that
   * transaction, so a retry of the request replays it whatever happens to the process after the
   * commit (CONTRACT.md §5). The PostgreSQL adapter marks the request's idempotency record done
   * with it, and fails the append with `AnswerAlreadyStored`, writing nothing, when that attempt no
   * longer holds the record (another attempt of the request took it over, or committed first). Adapters without such a
   * transaction (`transactionalReceipts` false) ignore it: the events carry the key in their metadata instead.
   */
  receipt?: () => AppendReceipt | undefined;
}

/** A request's answer as its idempotency record keeps it (see `AppendOptions.receipt`). */
export interface AppendReceipt {
  businessId: string;
  key: string;
  /** The claim of the attempt answering: stored only while that attempt still holds the key. */
  token: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The request's idempotency record was answered by another attempt: this append wrote nothing. */
export class AnswerAlreadyStored extends Error {
  override name = 'AnswerAlreadyStored';
  constructor(readonly key: string) {
    super(`the request with Idempotency-Key '${key}' was already answered`);
  }
}

/**
 * The append was sent and no answer came back: on PostgreSQL the connection broke while its
 * COMMIT was under way; on KurrentDB the call failed in a way that does not say whether the server
 * wrote (a timeout, a lost connection). It may or may not have been applied, so it is neither
 * retried nor reported as refused (answered 503). A retry of the request with its
 * Idempotency-Key learns the outcome: from the answer stored with the append
 * (`AppendOptions.receipt`), or, where there is none, from the log (`src/commands/earlier-attempt.ts`).
 */
export class CommitOutcomeUnknown extends Error {
  override name = 'CommitOutcomeUnknown';
  constructor(cause: unknown) {
    super(`the append's commit was sent but its outcome is unknown: ${String((cause as Error)?.message ?? cause)}`, { cause });
  }
}

/** See `AppendOptions.redecide`. */
export type Redecide = (read: (stream: string, fromRevision: number) => Promise<RecordedEvent[]>) => Promise<AppendWrite[]>;

/** What a decision folds of an event: its revision in its stream, its type and data (and the version it was written at, when not the current one). */
export type RecordedEvent = Pick<StoredEvent, 'streamPosition' | 'type' | 'data'> & {
  metadata?: Pick<EventMetadata, 'event_version'>;
  /** When it was recorded: the customer decider folds it (lots, the rolling tier window). */
  recordedAt?: Date;
};

/** `no_stream`: the stream must not exist; `any`: no check; a number: the revision of its last event. */
export type ExpectedRevision = 'no_stream' | 'any' | number;

/** Events to append to one stream at an expected revision; with no events, a condition (see `append`). */
export interface AppendWrite {
  stream: string;
  expected: ExpectedRevision;
  events: NewEvent[];
}

export interface NewEvent {
  /** UUID; the store assigns one when absent. */
  id?: string;
  type: string;
  data: unknown;
  metadata: EventMetadata;
}

export interface StoredEvent {
  eventId: string;
  streamId: string;
  /** 0-based revision of the event within its stream. */
  streamPosition: number;
  type: string;
  data: any;
  metadata: EventMetadata;
  recordedAt: Date;
  /** Position in the global order (`readAll`). */
  position: Checkpoint;
}

export interface ReadAllOptions {
  /**
   * `projection`: each event's metadata need hold only what projectors read (`ProjectionMetadata`),
   * so they get and parse a fraction of its bytes: the rest (who, which request, the hash chain)
   * is for the audit and for answers. An adapter may return all of it anyway. Default `all`.
   */
  metadata?: 'all' | 'projection';
}

/** What projectors read of an event's metadata: its business, and the version its data was written at (for decoding). */
export type ProjectionMetadata = Pick<EventMetadata, 'business_id' | 'event_version'>;

/** An event as `readAll` gives it to projectors (`metadata: 'projection'`). */
export type ProjectionSourceEvent = Omit<StoredEvent, 'metadata'> & { metadata: ProjectionMetadata };

/** A position in `readAll` order; compare with `compareCheckpoints`. */
export interface Checkpoint {
  globalPosition: bigint;
}

export const START: Checkpoint = { globalPosition: 0n };

/** What `streamHeads` answers. */
export interface StreamHeads {
  /** The log's head position at the moment the heads were taken (`headPosition`). */
  position: Checkpoint;
  streams: ListedStream[];
}

/** Where one stream ends: the revision of its last event and that event's chain hash. */
export interface ListedStream {
  stream: string;
  revision: number;
  /** `hash` of the last event's metadata (`GENESIS_HASH` when it has none). */
  lastHash: string;
}

export interface AppendResult {
  /** Position of the last event written; once a projector passes it, the write is visible. */
  position: Checkpoint;
  /** New revision of each written stream. */
  revisions: Record<string, number>;
}

/** What `readStreamFromSnapshot` answers: the snapshot as stored (JSON), and the events after it. */
export interface SnapshotAndEvents {
  snapshot: { state: unknown; revision: number } | null;
  events: RecordedEvent[];
}

export interface ReadStreamOptions {
  /** First revision to read (inclusive); with `backwards`, the revision to start from. */
  from?: number;
  backwards?: boolean;
  max?: number;
}

export class WrongExpectedVersion extends Error {
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream' | 'unknown',
  ) {
    super(`Stream '${stream}' expected at ${String(expected)} but is at ${String(actual)}`);
    this.name = 'WrongExpectedVersion';
  }
}

/** An append failed because one it was decided on (`after`) failed: a conflict like any other, retried on a fresh read. */
export class DependencyFailed extends WrongExpectedVersion {
  constructor(
    write: AppendWrite,
    readonly dependencyError: unknown,
  ) {
    super(write.stream, write.expected, 'unknown');
    this.message = `An append the one to '${write.stream}' was decided on failed: ${String(dependencyError)}`;
    this.name = 'DependencyFailed';
  }
}

/** Waits for `after` to settle; throws `DependencyFailed` if any of them failed. */
export async function awaitDependencies(writes: AppendWrite[], after: Array<Promise<AppendResult>> = []): Promise<void> {
  for (const outcome of await Promise.allSettled(after)) {
    if (outcome.status === 'rejected') throw new DependencyFailed(writes[0] ?? { stream: '', expected: 'any', events: [] }, outcome.reason);
  }
}

export function compareCheckpoints(a: Checkpoint, b: Checkpoint): number {
  return a.globalPosition < b.globalPosition ? -1 : a.globalPosition > b.globalPosition ? 1 : 0;
}
