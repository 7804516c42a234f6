import { randomUUID } from 'node:crypto';
import { type AppendWrite, DependencyFailed, type ExpectedRevision, WrongExpectedVersion } from './event-store.js';
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
  | { ok: false; error: WrongExpectedVersion };

/** An append of a batch; `after`: the earlier appends of the batch (their indexes) it was decided on. */
export interface PlannedAppend {
  writes: AppendWrite[];
  after: number[];
}

export interface BatchPlan {
  outcomes: AppendOutcome[];
  streams: StreamUpdate[];
  rows: EventRow[];
}

const ABSENT: StreamHead = { version: 'no_stream', lastHash: GENESIS_HASH };

/** A write with events moves its stream; one without is a condition (or, with `any`, nothing). */
export function isCondition(write: AppendWrite): boolean {
  return write.events.length === 0 && write.expected !== 'any';
}

function matches(expected: ExpectedRevision, actual: number | 'no_stream'): boolean {
  return expected === 'any' || expected === actual;
}

/**
 * Decides every append of a batch in queue order, against the streams as read at the start of the
 * batch and as each earlier successful append of the batch left them: two appends of one stream
 * both succeed when the second expects the revision the first produces. An append whose check
 * fails, or that was decided on one that fails, contributes nothing; all of one append's writes
 * succeed or none does. Pure: no I/O.
 */
export function planBatch(appends: PlannedAppend[], found: Map<string, StreamHead>): BatchPlan {
  const heads = new Map(found);
  const outcomes: AppendOutcome[] = [];
  for (const { writes, after } of appends) {
    const failed = after.map((i) => outcomes[i]!).find((o) => !o.ok);
    outcomes.push(failed && !failed.ok ? { ok: false, error: new DependencyFailed(writes[0]!, failed.error) } : decideAppend(writes, heads));
  }
  const streams: StreamUpdate[] = [];
  for (const [stream, head] of heads) {
    if (head === found.get(stream) || head.version === 'no_stream') continue;
    streams.push({ stream_id: stream, version: head.version, last_hash: head.lastHash, is_new: !found.has(stream) });
  }
  // One order for every batch: two batches creating the same new streams then wait for each other
  // instead of each holding one the other inserts.
  streams.sort((a, b) => (a.stream_id < b.stream_id ? -1 : a.stream_id > b.stream_id ? 1 : 0));
  return { outcomes, streams, rows: outcomes.flatMap((o) => (o.ok ? o.rows : [])) };
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
