import { type AppendReceipt, type AppendResult, type AppendWrite, type Checkpoint, type Redecide, WrongExpectedVersion } from '../store/event-store.js';
import type { DomainEvent } from '../events/catalogue.js';
import type { AnsweredEvent, CommandContext } from '../events/metadata.js';
import { type DecidedWrite, decidedWrite, decodedFor, type Load, loadAggregate } from './aggregate.js';
import type { CommandDeps } from './command-deps.js';
import type { Decider } from './decider.js';
import { retryOnConflict } from './retry-on-conflict.js';

/** What a change appended: the writes of the attempt that succeeded, and the position of its last event. */
export interface Written {
  writes: DecidedWrite[];
  position: Checkpoint;
}

export interface WriteOptions {
  /** The request's answer from the writes as finally decided, stored with the append (`AppendOptions.receipt`). */
  receipt?: ((writes: AppendWrite[]) => AppendReceipt | undefined) | undefined;
}

/** Writes decided and queued for appending (not yet committed). */
interface Queued {
  writes: DecidedWrite[];
  appended: Promise<AppendResult>;
}

/**
 * The shape of every change: under in-process locks on `lockKeys` (taken in the order given),
 * decide the writes and queue their append (atomic). `decide` loads what it needs through `load`,
 * which trusts a state held in memory without reading the store: every write carries the revision
 * it was decided on as `expected` (streams only read are passed as `unchangedSince` conditions),
 * so a stale state fails the append and the change runs again, that stream read afresh.
 *
 * The locks are released once the append is queued, not committed: each written stream's `after`
 * state is cached as the state after that queued append, so the next change on the stream decides
 * on it at once and expects the next revision, and several changes to one stream share a commit.
 * Such a change names the queued appends it decided on as `after`, and fails with them: its own
 * expected revision would not notice that a writer elsewhere took the revision a failed one would
 * have produced. The change then awaits its own append, and read-your-writes, without the locks.
 */
export async function write(
  deps: CommandDeps,
  lockKeys: string[],
  decide: (load: Load) => Promise<DecidedWrite[]>,
  options: WriteOptions = {},
): Promise<Written | null> {
  const written = await retryOnConflict(async () => {
    const queue = () => decideAndQueue(deps, decide, options, true);
    const locked = lockKeys.reduceRight<typeof queue>((inner, key) => () => deps.locks.run(key, inner), queue);
    const queued = await locked();
    if (!queued) return null;
    try {
      const { position } = await queued.appended;
      return { writes: queued.writes, position }; // read after the append: it may have been decided again
    } catch (error) {
      if (error instanceof WrongExpectedVersion) deps.cache.forget(error.stream);
      throw error;
    }
  }, undefined, () => deps.conflicts?.retried('reload'));
  if (written) await deps.settle(written.position);
  return written;
}

/**
 * A change that starts a stream under an id just made: the same path as every change (see
 * `write`), the stream expected not to exist. `decide` gets the decider's initial state. Returns
 * the stream's first event, which the request's answer is built from (and, with an
 * Idempotency-Key, stored with the append: see `answeredBy`).
 */
export async function createStream<State, Event extends DomainEvent>(
  deps: CommandDeps,
  stream: string,
  decider: Pick<Decider<unknown, State, Event>, 'initialState' | 'evolve'>,
  decide: (state: State) => Event[],
  ctx: CommandContext,
): Promise<AnsweredEvent> {
  const written = await write(
    deps,
    [stream],
    async () => {
      const initial = { state: decider.initialState(), revision: 'no_stream' as const };
      return [decidedWrite(stream, initial, decider, decide(initial.state), ctx)];
    },
    answeredBy(ctx, (writes) => firstAppended({ writes }, stream)),
  );
  return firstAppended(written, stream);
}

/**
 * The first event a change appended to `stream` (of the types `answers` accepts): the one a
 * request's answer is built from.
 */
export function firstAppended(written: { writes: AppendWrite[] } | null, stream: string, answers: (type: string) => boolean = () => true): AnsweredEvent {
  const event = written?.writes.find((w) => w.stream === stream)?.events.find((e) => answers(e.type));
  if (!event) throw new Error(`no event was appended to ${stream}`);
  return { streamId: stream, type: event.type, data: event.data, recordedAt: new Date(event.metadata.recorded_at) };
}

/**
 * The options that store the request's answer (`ctx.receipt`, when it has an Idempotency-Key) in
 * the append's own transaction, built from the event `answer` picks of the writes as finally
 * decided: the one the command returns (CONTRACT.md §5).
 */
export function answeredBy(ctx: CommandContext, answer: (writes: AppendWrite[]) => AnsweredEvent): WriteOptions {
  const { receipt } = ctx;
  return { receipt: receipt && ((writes) => receipt(answer(writes))) };
}

async function decideAndQueue(
  deps: CommandDeps,
  decide: (load: Load) => Promise<DecidedWrite[]>,
  options: WriteOptions,
  trust: boolean,
): Promise<Queued | null> {
  let optimistic = false;
  const after = new Set<Promise<AppendResult>>();
  const load: Load = async (stream, decider) => {
    const loaded = await loadAggregate(deps.store, stream, decider, deps.cache, trust);
    optimistic ||= loaded.optimistic;
    if (loaded.pending) after.add(loaded.pending);
    return loaded;
  };
  let writes: DecidedWrite[];
  try {
    writes = await decide(load);
  } catch (error) {
    // No append checks a refusal: one decided on memory alone is confirmed on the store's state.
    if (optimistic && !(error instanceof WrongExpectedVersion)) return decideAndQueue(deps, decide, options, false);
    throw error;
  }
  // Nor deciding nothing.
  if (!writes.some((w) => w.events.length > 0)) return optimistic ? decideAndQueue(deps, decide, options, false) : null;
  const queued = { writes } as Queued;
  let cached: Array<{ superseded?: boolean }> = [];
  // Where the store finds a stream moved (another process wrote), it asks for the decision again
  // while it holds the streams: on the states as they are, so the append cannot be overtaken.
  const redecide: Redecide = async (read) => {
    deps.conflicts?.retried('in_batch');
    const again = await decide(readingIn(deps, read));
    for (const entry of cached) entry.superseded = true;
    queued.writes = again;
    cached = cacheQueued(deps, again, queued, { replace: true });
    return again;
  };
  const { receipt } = options;
  queued.appended = deps.store.append(writes, { after: [...after], redecide, receipt: receipt && (() => receipt(queued.writes)) });
  cached = cacheQueued(deps, writes, queued);
  return queued;
}

/** Caches each written stream's state as the state after `queued`'s append (see `write`). */
function cacheQueued(deps: CommandDeps, writes: DecidedWrite[], queued: Queued, options: { replace?: boolean } = {}) {
  const entries = [];
  for (const w of writes) {
    if (w.after === undefined || w.events.length === 0) continue;
    const revision = revisionAfter(w);
    if (revision === undefined) deps.cache.forget(w.stream);
    else entries.push(deps.cache.setQueued(w.stream, w.after, revision, queued.appended, options));
  }
  return entries;
}

/**
 * Loads for a decision made again inside an append (`AppendOptions.redecide`): each stream from
 * the newest committed state memory holds of it (or its snapshot), then the events the store
 * reads after that. Nothing is trusted from memory that the store has not confirmed.
 */
function readingIn(deps: CommandDeps, read: Parameters<Redecide>[0]): Load {
  let folded = foldedInBatch.get(read);
  if (!folded) foldedInBatch.set(read, (folded = new Map()));
  const memo = folded;
  return async (stream, decider) => {
    const base = await deps.cache.baseline<ReturnType<typeof decider.initialState>>(stream, decider.revive);
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
function revisionAfter(w: DecidedWrite): number | undefined {
  if (w.expected === 'any') return undefined;
  return (w.expected === 'no_stream' ? -1 : w.expected) + w.events.length;
}
