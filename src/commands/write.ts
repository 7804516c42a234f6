import type { AppendWrite } from '../store/event-store.js';
import type { CommandDeps } from './command-deps.js';
import { retryOnConflict } from './retry-on-conflict.js';

/**
 * The shape of every change: under in-process locks on `lockKeys` (taken in the order given),
 * decide the writes and append them atomically, again from a fresh load when another writer moved
 * a stream first. Read-your-writes waits after the locks are released, so the next command on the
 * same stream need not wait for the read models.
 */
export async function write(deps: CommandDeps, lockKeys: string[], decide: () => Promise<AppendWrite[]>): Promise<void> {
  const attempt = () =>
    retryOnConflict(async () => {
      const writes = (await decide()).filter((w) => w.events.length > 0);
      return writes.length === 0 ? null : (await deps.store.append(writes)).position;
    });
  const locked = lockKeys.reduceRight<() => ReturnType<typeof attempt>>((inner, key) => () => deps.locks.run(key, inner), attempt);
  const position = await locked();
  if (position) await deps.settle(position);
}
