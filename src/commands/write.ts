import { type Checkpoint, WrongExpectedVersion } from '../store/event-store.js';
import { type DecidedWrite, type Load, loadAggregate } from './aggregate.js';
import type { CommandDeps } from './command-deps.js';
import { retryOnConflict } from './retry-on-conflict.js';

/** What a change appended: the writes of the attempt that succeeded, and the position of its last event. */
export interface Written {
  writes: DecidedWrite[];
  position: Checkpoint;
}

/**
 * The shape of every change: under in-process locks on `lockKeys` (taken in the order given),
 * decide the writes and append them atomically. `decide` loads what it needs through `load`, which
 * trusts a state held in memory without reading the store: every write carries the revision it
 * was decided on as `expected` (streams only read are passed as `unchangedSince` conditions), so a
 * stale state fails the append and the change runs again, that stream read afresh. After an
 * append, each write's `after` state is cached at its new revision, so the next change on the
 * stream reads nothing. Read-your-writes waits after the locks are released, so the next command
 * on the same stream need not wait for the read models.
 */
export async function write(deps: CommandDeps, lockKeys: string[], decide: (load: Load) => Promise<DecidedWrite[]>): Promise<Written | null> {
  const attempt = () => retryOnConflict(() => decideAndAppend(deps, decide, true));
  const locked = lockKeys.reduceRight<() => ReturnType<typeof attempt>>((inner, key) => () => deps.locks.run(key, inner), attempt);
  const written = await locked();
  if (written) await deps.settle(written.position);
  return written;
}

async function decideAndAppend(deps: CommandDeps, decide: (load: Load) => Promise<DecidedWrite[]>, trust: boolean): Promise<Written | null> {
  let optimistic = false;
  const load: Load = async (stream, decider) => {
    const loaded = await loadAggregate(deps.store, stream, decider, deps.cache, trust);
    optimistic ||= loaded.optimistic;
    return loaded;
  };
  let writes: DecidedWrite[];
  try {
    writes = await decide(load);
  } catch (error) {
    // No append checks a refusal: one decided on memory alone is confirmed on the store's state.
    if (optimistic && !(error instanceof WrongExpectedVersion)) return decideAndAppend(deps, decide, false);
    throw error;
  }
  // Nor deciding nothing.
  if (!writes.some((w) => w.events.length > 0)) return optimistic ? decideAndAppend(deps, decide, false) : null;
  try {
    const result = await deps.store.append(writes);
    for (const w of writes) {
      const revision = result.revisions[w.stream];
      if (w.after !== undefined && w.events.length > 0 && revision !== undefined) deps.cache.set(w.stream, w.after, revision);
    }
    return { writes, position: result.position };
  } catch (error) {
    if (error instanceof WrongExpectedVersion) deps.cache.forget(error.stream);
    throw error;
  }
}
