import type { Clock } from '../clock.js';
import type { IdGenerator } from '../ids.js';
import type { Checkpoint, EventStore } from '../store/event-store.js';
import type { ConflictRetries } from './conflict-retries.js';
import type { KeyedLock } from './keyed-lock.js';
import type { StateCache } from './state-cache.js';

/** What command handlers need from the outside world; wired once in `src/services.ts`. */
export interface CommandDeps {
  store: EventStore;
  /** Where new ids come from (`newId` in production). */
  ids: IdGenerator;
  /** Where time comes from, for what commands stamp outside a request (a request's time is in its `CommandContext`). */
  clock: Clock;
  locks: KeyedLock;
  /** Recently loaded aggregate states (a cache: correctness never depends on it). */
  cache: StateCache;
  /** Waits (bounded) until the read models include `position`, so the caller's next GET sees its write. */
  settle(position: Checkpoint): Promise<void>;
  /** Told each time a change is decided again because another writer moved a stream first (for `/metrics`). */
  conflicts?: ConflictRetries;
}
