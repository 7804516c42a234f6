import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EventType } from '../events/catalogue.js';
import type { StoredEvent } from '../store/event-store.js';

/**
 * Turns events into read-model rows. `apply` writes only through the transaction it is given,
 * which also moves the projector's checkpoint: the read model and its position commit together.
 */
export interface Projector {
  name: string;
  handles: ReadonlySet<EventType>;
  /** The read-model tables it alone writes: what `loyalty projections rebuild` replaces. */
  tables: readonly string[];
  /**
   * A reactor's rows cause effects outside the database (webhook deliveries): replaying it would
   * repeat them, so it is never rebuilt.
   */
  reactor?: boolean;
  apply(event: StoredEvent, trx: Transaction<Database>): Promise<void>;
}
