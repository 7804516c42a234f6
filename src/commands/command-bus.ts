import { type AppendReceipt, type AppendResult, type AppendWrite, type Checkpoint, type EventStore, type Redecide, WrongExpectedVersion } from '../store/event-store.js';
import type { Clock } from '../clock.js';
import type { IdGenerator } from '../ids.js';
import type { AnsweredEvent, CommandContext } from '../events/metadata.js';
import type { DomainEvent } from '../events/catalogue.js';
import { type DecidedWrite, decidedWrite, decodedFor, type Folding, type Load, loadAggregate, withMetadata } from './aggregate.js';
import type { ConflictRetries } from './conflict-retries.js';
import { answerOfEarlierAttempt } from './earlier-attempt.js';
import type { KeyedLock } from './keyed-lock.js';
import { retryOnConflict } from './retry-on-conflict.js';
import type { StateCache } from './state-cache.js';

/**
 * A command handler's decision: load what it decides on through `load`, decide with the
 * deciders, return the writes of the change (Emmett's `decide`, with the loading in the handler's
 * hands because one change may read several streams: a customer, its program, a reward).
 */
export type Decision = (load: Load) => Promise<DecidedWrite[]>;

/** A write as appended: its events stamped with their metadata, and the state they lead to. */
export type AppendedWrite = AppendWrite & { after?: unknown };

/** What a change appended: the writes of the attempt that succeeded, and the position of its last event. */
export interface Written {
  writes: AppendedWrite[];
  position: Checkpoint;
}

export interface Change {
  /** The streams held in this process while the change is decided and queued, taken in this order. */
  lock: string[];
  /**
   * The command's answer, picked from the writes as finally decided (see `firstAppended`). With
   * it, a request with an Idempotency-Key has that answer stored in the append's own transaction
   * (`ctx.receipt`, CONTRACT.md §5), and `handle` returns it.
   */
  answer?: ((writes: AppendWrite[]) => AnsweredEvent) | undefined;
  /**
   * The append is queued only once this settles (the decision is not held up, nor the locks): a
   * caller deciding many changes, one turn of the event loop each, has them share one commit.
   */
  appendAfter?: Promise<unknown> | undefined;
}

/**
 * Where every change goes: load → decide (the handler's `Decision`) → append. What makes that
 * fast and safe across processes sits here, behind `handle`, not in the handlers: in-process
 * locks, the state cache, appending at the revisions decided on (a group commit shares one
 * transaction), deciding again on a conflict, and read-your-writes.
 */
export interface CommandBus {
  handle(ctx: CommandContext, change: Change & { answer: NonNullable<Change['answer']> }, decide: Decision): Promise<AnsweredEvent>;
  handle(ctx: CommandContext, change: Change, decide: Decision): Promise<Written | null>;
  /** Loads a stream's state outside a change (reading the store after the cached state). */
  load: Load;
}

/** What the bus is made of; wired once in `src/services.ts`. */
export interface BusParts {
  store: EventStore;
  /** Where stored events' ids come from (`newId('storedEvent')`). */
  ids: IdGenerator;
  locks: KeyedLock;
  /** Recently loaded aggregate states (a cache: correctness never depends on it). */
  cache: StateCache;
  /** Waits (bounded) until the read models include `position`, so the caller's next GET sees its write. */
  settle(position: Checkpoint): Promise<void>;
  /** Told each time a change is decided again because another writer moved a stream first (for `/metrics`). */
  conflicts?: ConflictRetries | undefined;
}

/** What command handlers need from the outside world: the bus, ids, time, and reads of the log. */
export interface CommandDeps {
  bus: CommandBus;
  /** Where new ids come from (`newId` in production). */
  ids: IdGenerator;
  /** Where time comes from, for what commands stamp outside a request (a request's time is in its `CommandContext`). */
  clock: Clock;
  /** The log, read-only: checks that read a stream's last event (a reference's holder) or a short stream whole (a unique value's). */
  reads: Pick<EventStore, 'readStream'>;
}

/** The command handlers' dependencies over one bus. */
export function commandDeps(parts: BusParts & { clock: Clock }): CommandDeps {
  return { bus: commandBus(parts), ids: parts.ids, clock: parts.clock, reads: parts.store };
}

type Receipt = ((writes: AppendWrite[]) => AppendReceipt | undefined) | undefined;

/** Writes decided and queued for appending (not yet committed). */
interface Queued {
  writes: AppendedWrite[];
  appended: Promise<AppendResult>;
}

/**
 * The bus: under in-process locks on `change.lock` (taken in the order given), decide the writes
 * and queue their append (atomic). The decision loads through a `load` that trusts a state held
 * in memory without reading the store: every write carries the revision it was decided on as
 * `expected` (streams only read are passed as `unchangedSince` conditions), so a stale state
 * fails the append and the change runs again, that stream read afresh (`retryOnConflict`).
 *
 * The locks are released once the append is queued, not committed: each written stream's `after`
 * state is cached as the state after that queued append, so the next change on the stream decides
 * on it at once and expects the next revision, and several changes to one stream share a commit.
 * Such a change names the queued appends it decided on as `after`, and fails with them: its own
 * expected revision would not notice that a writer elsewhere took the revision a failed one would
 * have produced. The change then awaits its own append, and read-your-writes, without the locks.
 */
export function commandBus(parts: BusParts): CommandBus {
  async function handle(ctx: CommandContext, change: Change, decide: Decision): Promise<AnsweredEvent | Written | null> {
    const { answer } = change;
    // A retry whose earlier attempt may have appended, where its answer was not stored with the append.
    const earlier = answer && ctx.earlierAttempt && (await answerOfEarlierAttempt(parts.store, ctx, change.lock, answer));
    if (earlier) {
      await parts.settle(earlier.position);
      ctx.earlierAttempt?.rebuilt();
      return earlier.answer;
    }
    // The events get their metadata here, for every attempt alike: who, when, which request, an id.
    const stamped = async (load: Load): Promise<AppendedWrite[]> =>
      (await decide(load)).map((w) => ({ ...w, events: withMetadata(w.events, ctx, parts.ids) }));
    const stores = ctx.receipt;
    const receipt: Receipt = answer && stores && ((writes) => stores(answer(writes)));
    const written = await retryOnConflict(() => attempt(parts, change.lock, stamped, receipt, change.appendAfter), undefined, () => parts.conflicts?.retried('reload'));
    if (written) await parts.settle(written.position);
    return answer ? answer(written?.writes ?? []) : written;
  }
  return {
    handle: handle as CommandBus['handle'],
    load: (stream, decider) => loadAggregate(parts.store, stream, decider, parts.cache),
  };
}

/** One attempt: decide and queue under the locks, then await the append without them. */
async function attempt(
  parts: BusParts,
  lockKeys: string[],
  decide: (load: Load) => Promise<AppendedWrite[]>,
  receipt: Receipt,
  appendAfter: Promise<unknown> | undefined,
): Promise<Written | null> {
  const queue = () => decideAndQueue(parts, decide, receipt, true, appendAfter);
  const locked = lockKeys.reduceRight<typeof queue>((inner, key) => () => parts.locks.run(key, inner), queue);
  const queued = await locked();
  if (!queued) return null;
  try {
    const { position } = await queued.appended;
    return { writes: queued.writes, position }; // read after the append: it may have been decided again
  } catch (error) {
    if (error instanceof WrongExpectedVersion) parts.cache.forget(error.stream);
    throw error;
  }
}

/**
 * The decision that starts `stream` under an id just made: `decide` gets the decider's initial
 * state, and the stream is expected not to exist.
 */
export function startStream<State, Event extends DomainEvent>(stream: string, decider: Folding<State, Event>, decide: (state: State) => Event[]): Decision {
  return async () => {
    const unborn = { state: decider.initialState(), revision: 'no_stream' as const };
    return [decidedWrite(stream, unborn, decider, decide(unborn.state))];
  };
}

/**
 * The first event a change appended to `stream` (of the types `answers` accepts): the one a
 * request's answer is built from.
 */
export function firstAppended(writes: AppendWrite[], stream: string, answers: (type: string) => boolean = () => true): AnsweredEvent {
  const event = writes.find((w) => w.stream === stream)?.events.find((e) => answers(e.type));
  if (!event) throw new Error(`no event was appended to ${stream}`);
  return { streamId: stream, type: event.type, data: event.data, recordedAt: new Date(event.metadata.recorded_at) };
}

/** The answer of a change that starts or changes `stream`: the first event appended to it. */
export const firstOn = (stream: string) => (writes: AppendWrite[]) => firstAppended(writes, stream);

async function decideAndQueue(
  parts: BusParts,
  decide: (load: Load) => Promise<AppendedWrite[]>,
  receipt: Receipt,
  trust: boolean,
  appendAfter?: Promise<unknown>,
): Promise<Queued | null> {
  let optimistic = false;
  const after = new Set<Promise<AppendResult>>();
  const load: Load = async (stream, decider) => {
    const loaded = await loadAggregate(parts.store, stream, decider, parts.cache, trust);
    optimistic ||= loaded.optimistic;
    if (loaded.pending) after.add(loaded.pending);
    return loaded;
  };
  let writes: AppendedWrite[];
  try {
    writes = await decide(load);
  } catch (error) {
    // No append checks a refusal: one decided on memory alone is confirmed on the store's state.
    if (optimistic && !(error instanceof WrongExpectedVersion)) return decideAndQueue(parts, decide, receipt, false, appendAfter);
    throw error;
  }
  // Nor deciding nothing.
  if (!writes.some((w) => w.events.length > 0)) return optimistic ? decideAndQueue(parts, decide, receipt, false, appendAfter) : null;
  const queued = { writes } as Queued;
  let cached: Array<{ superseded?: boolean }> = [];
  // Where the store finds a stream moved (another process wrote), it asks for the decision again
  // while it holds the streams: on the states as they are, so the append cannot be overtaken.
  const redecide: Redecide = async (read) => {
    parts.conflicts?.retried('in_batch');
    const again = await decide(readingIn(parts, read));
    for (const entry of cached) entry.superseded = true;
    queued.writes = again;
    cached = cacheQueued(parts, again, queued, { replace: true });
    return again;
  };
  const append = () => parts.store.append(writes, { after: [...after], redecide, receipt: receipt && (() => receipt(queued.writes)) });
  queued.appended = appendAfter ? appendAfter.then(append, append) : append();
  cached = cacheQueued(parts, writes, queued);
  return queued;
}

/** Caches each written stream's state as the state after `queued`'s append (see `commandBus`). */
function cacheQueued(parts: BusParts, writes: AppendedWrite[], queued: Queued, options: { replace?: boolean } = {}) {
  const entries = [];
  for (const w of writes) {
    if (w.after === undefined || w.events.length === 0) continue;
    const revision = revisionAfter(w);
    if (revision === undefined) parts.cache.forget(w.stream);
    else entries.push(parts.cache.setQueued(w.stream, w.after, revision, queued.appended, options));
  }
  return entries;
}

/**
 * Loads for a decision made again inside an append (`AppendOptions.redecide`): each stream from
 * the newest committed state memory holds of it (or its snapshot), then the events the store
 * reads after that. Nothing is trusted from memory that the store has not confirmed.
 */
function readingIn(parts: BusParts, read: Parameters<Redecide>[0]): Load {
  let folded = foldedInBatch.get(read);
  if (!folded) foldedInBatch.set(read, (folded = new Map()));
  const memo = folded;
  return async (stream, decider) => {
    const base = await parts.cache.baseline<ReturnType<typeof decider.initialState>>(stream, decider.revive);
    const earlier = memo.get(stream);
    const start = earlier && earlier.decider === decider && earlier.revision >= (base?.revision ?? -1) ? earlier : base;
    const events = await read(stream, start ? start.revision + 1 : 0);
    let state = (start ? start.state : decider.initialState()) as ReturnType<typeof decider.initialState>;
    for (const event of events) state = decider.evolve(state, decodedFor(decider, event));
    const revision = events.at(-1)?.streamPosition ?? start?.revision ?? 'no_stream';
    if (revision !== 'no_stream') memo.set(stream, { decider, state, revision });
    return { state, revision, optimistic: false };
  };
}

/**
 * Per batch (its `read`), the newest state each redecision folded of a stream: the next append of
 * the batch decided again on that stream folds on from it, not from the cache's baseline again, so
 * a batch of n appends to one hot stream folds each event once instead of n times.
 */
const foldedInBatch = new WeakMap<Parameters<Redecide>[0], Map<string, { decider: unknown; state: unknown; revision: number }>>();

/** The revision a write's stream is at once it is appended (unknown for `any`). */
function revisionAfter(w: AppendedWrite): number | undefined {
  if (w.expected === 'any') return undefined;
  return (w.expected === 'no_stream' ? -1 : w.expected) + w.events.length;
}
