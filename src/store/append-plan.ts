import { randomUUID } from 'node:crypto';
import { type AppendWrite, DependencyFailed, type ExpectedRevision, type RecordedEvent, type Redecide, WrongExpectedVersion } from './event-store.js';
import { eventHash, GENESIS_HASH, type HashedFields } from './hash-chain.js';

/** A stream as the batch read found it (locked), or as an earlier append of the batch left it. */
export interface StreamHead {
  version: number | 'no_stream';
  lastHash: string;
}

/** The row a written stream ends the batch with; `isNew`: the batch read found no row for it. */
export interface StreamUpdate {
  stream_id: string;
  version: number;
  last_hash: string;
  is_new: boolean;
}

/** An event as inserted: its metadata carries `prev_hash` and `hash`. */
export interface EventRow extends HashedFields {
  recorded_at: string;
}

export type AppendOutcome =
  | { ok: true; revisions: Record<string, number>; rows: EventRow[]; noStreamConditions: string[] }
  | { ok: false; error: Error };

/**
 * An append of a batch; `after`: the earlier appends of the batch (their indexes) it was decided
 * on; `failedDependency`: why one it was decided on, settled before the batch, failed.
 */
export interface PlannedAppend {
  writes: AppendWrite[];
  after: number[];
  failedDependency?: { error: unknown };
  redecide?: Redecide;
}

export interface BatchPlan {
  outcomes: AppendOutcome[];
  /** The writes an append was decided again into (by its index), where it was. */
  redecided: Map<number, AppendWrite[]>;
  streams: StreamUpdate[];
  rows: EventRow[];
}

/** Reads a stream's committed events from a revision, inside the batch's transaction. */
export type ReadCommitted = (stream: string, fromRevision: number) => Promise<RecordedEvent[]>;

const ABSENT: StreamHead = { version: 'no_stream', lastHash: GENESIS_HASH };

/** A write with events moves its stream; one without is a condition (or, with `any`, nothing). */
export function isCondition(write: AppendWrite): boolean {
  return write.events.length === 0 && write.expected !== 'any';
}

function matches(expected: ExpectedRevision, actual: number | 'no_stream'): boolean {
  return expected === 'any' || expected === actual;
}

/**
 * Decides every append of a batch in queue order, against the streams as read (and locked) at the
 * start of the batch and as each earlier successful append of the batch left them: two appends of
 * one stream both succeed when the second expects the revision the first produces. An append
 * whose check fails, or that was decided on one that fails, contributes nothing; all of one
 * append's writes succeed or none does.
 *
 * Such an append that can `redecide` is decided again first, on the streams as the batch holds
 * them (`readCommitted` gives what it lacks of the committed events; those of earlier appends of
 * the batch come from the plan), provided its new writes touch only streams the batch holds
 * (`held`). So the batch that holds a stream moved by another process still commits every append
 * it carries for it. Without `redecide`, no I/O.
 */
export async function planBatch(
  appends: PlannedAppend[],
  found: Map<string, StreamHead>,
  readCommitted?: ReadCommitted,
  held: ReadonlySet<string> = new Set(found.keys()),
): Promise<BatchPlan> {
  const heads = new Map(found);
  const outcomes: AppendOutcome[] = [];
  const redecided = new Map<number, AppendWrite[]>();
  const read = readerOf(readCommitted, outcomes, found, held);
  for (const [i, { writes, after, failedDependency, redecide }] of appends.entries()) {
    const failed = failedDependency ?? after.map((j) => outcomes[j]!).find((o): o is Extract<AppendOutcome, { ok: false }> => !o.ok);
    let outcome: AppendOutcome = failed ? { ok: false, error: new DependencyFailed(writes[0]!, failed.error) } : decideAppend(writes, heads);
    if (!outcome.ok && redecide && readCommitted) {
      const again = await decideAgain(redecide, read, held);
      if (again instanceof Error) {
        if (!(again instanceof WrongExpectedVersion)) outcome = { ok: false, error: again };
      } else {
        outcome = decideAppend(again, heads);
        redecided.set(i, again);
      }
    }
    outcomes.push(outcome);
  }
  const streams: StreamUpdate[] = [];
  for (const [stream, head] of heads) {
    if (head === found.get(stream) || head.version === 'no_stream') continue;
    streams.push({ stream_id: stream, version: head.version, last_hash: head.lastHash, is_new: !found.has(stream) });
  }
  // One order for every batch: two batches creating the same new streams then wait for each other
  // instead of each holding one the other inserts.
  streams.sort((a, b) => (a.stream_id < b.stream_id ? -1 : a.stream_id > b.stream_id ? 1 : 0));
  return { outcomes, redecided, streams, rows: outcomes.flatMap((o) => (o.ok ? o.rows : [])) };
}

/** The append's new writes (in stream order), or why there are none: its refusal, or a `WrongExpectedVersion` when it needs a stream the batch does not hold. */
async function decideAgain(redecide: Redecide, read: ReadCommitted, held: ReadonlySet<string>): Promise<AppendWrite[] | Error> {
  let writes: AppendWrite[];
  try {
    writes = await redecide(read);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
  const outside = writes.find((w) => (w.events.length > 0 || isCondition(w)) && !held.has(w.stream));
  if (outside) return new WrongExpectedVersion(outside.stream, outside.expected, 'unknown');
  return [...writes].sort((a, b) => (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0));
}

/**
 * A stream's events from a revision as the next append of the batch finds them: the committed
 * ones (read once per stream and batch, the stream being locked; not at all when the batch holds
 * it and found it ending before that revision, as a stream only conditioned on usually does) and
 * those of the appends of the batch planned so far.
 */
function readerOf(
  readCommitted: ReadCommitted | undefined,
  outcomes: AppendOutcome[],
  found: Map<string, StreamHead>,
  held: ReadonlySet<string>,
): ReadCommitted {
  const committed = new Map<string, { from: number; events: RecordedEvent[] }>();
  return async (stream, fromRevision) => {
    let known = committed.get(stream);
    if (!known || known.from > fromRevision) {
      const head = found.get(stream)?.version ?? 'no_stream';
      const nothingCommitted = held.has(stream) && (head === 'no_stream' || head < fromRevision);
      known = { from: fromRevision, events: readCommitted && !nothingCommitted ? await readCommitted(stream, fromRevision) : [] };
      committed.set(stream, known);
    }
    const planned = outcomes
      .flatMap((o) => (o.ok ? o.rows : []))
      .filter((r) => r.stream_id === stream)
      .map((r) => ({ streamPosition: r.stream_position, type: r.type, data: r.data, recordedAt: new Date(r.recorded_at) }));
    return [...known.events, ...planned].filter((e) => e.streamPosition >= fromRevision);
  };
}

/** Checks one append against `heads` and, when it succeeds, moves them past its events. */
function decideAppend(writes: AppendWrite[], heads: Map<string, StreamHead>): AppendOutcome {
  const staged = new Map<string, StreamHead>();
  const head = (stream: string) => staged.get(stream) ?? heads.get(stream) ?? ABSENT;
  const revisions: Record<string, number> = {};
  const rows: EventRow[] = [];
  const noStreamConditions: string[] = [];
  for (const write of writes) {
    const current = head(write.stream);
    if (!matches(write.expected, current.version)) {
      return { ok: false, error: new WrongExpectedVersion(write.stream, write.expected, current.version) };
    }
    if (write.events.length === 0) {
      if (write.expected === 'no_stream') noStreamConditions.push(write.stream);
      continue;
    }
    const next = chain(write, current, rows);
    staged.set(write.stream, next);
    revisions[write.stream] = next.version as number;
  }
  for (const [stream, next] of staged) heads.set(stream, next);
  return { ok: true, revisions, rows, noStreamConditions };
}

/** Builds the write's event rows, each chained by hash to the one before; returns the stream's new head. */
function chain(write: AppendWrite, current: StreamHead, rows: EventRow[]): StreamHead {
  const first = current.version === 'no_stream' ? 0 : current.version + 1;
  let prevHash = current.lastHash;
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
    rows.push({ ...fields, metadata: { ...fields.metadata, prev_hash: prevHash, hash }, recorded_at: event.metadata.recorded_at });
    prevHash = hash;
  });
  return { version: first + write.events.length - 1, lastHash: prevHash };
}
