import { errors } from '../errors.js';
import { WrongExpectedVersion } from '../store/event-store.js';

/**
 * Loads, decides and appends again when another writer moved a stream first (bounded, jittered);
 * when the budget runs out the caller gets 409 `conflict` with `Retry-After`. `onRetry` is told of each retry.
 */
export async function retryOnConflict<T>(attempt: () => Promise<T>, maxAttempts = 20, onRetry?: () => void): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof WrongExpectedVersion)) throw error;
      if (n >= maxAttempts) throw errors.retryLater('Too many concurrent changes to this resource; retry the request.');
      onRetry?.();
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 * n)));
    }
  }
}
