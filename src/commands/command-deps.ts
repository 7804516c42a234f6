import type { Checkpoint, EventStore } from '../store/event-store.js';
import type { KeyedLock } from './keyed-lock.js';
import type { StateCache } from './state-cache.js';

/** What command handlers need from the outside world; wired once in `src/services.ts`. */
export interface CommandDeps {
  store: EventStore;
  locks: KeyedLock;
  /** Recently loaded aggregate states (a cache: correctness never depends on it). */
  cache: StateCache;
  /** Waits (bounded) until the read models include `position`, so the caller's next GET sees its write. */
  settle(position: Checkpoint): Promise<void>;
}
