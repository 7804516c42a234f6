/**
 * How a change met another writer's: `reload` — its append failed on a moved stream and the change
 * ran again on the stream as stored (`retryOnConflict`); `in_batch` — the store found the stream
 * moved while holding it and had the change decided again inside its batch (PostgreSQL server).
 */
export type ConflictRetry = 'reload' | 'in_batch';

/**
 * Tells listeners (the `/metrics` counter) each time a change is decided again because another
 * writer moved one of its streams first.
 *
 * @example
 * const conflicts = new ConflictRetries();
 * conflicts.onRetried((how) => counter.inc({ how }));
 */
export class ConflictRetries {
  private readonly listeners: Array<(how: ConflictRetry) => void> = [];

  onRetried(listener: (how: ConflictRetry) => void): void {
    this.listeners.push(listener);
  }

  retried(how: ConflictRetry): void {
    for (const listener of this.listeners) listener(how);
  }
}
