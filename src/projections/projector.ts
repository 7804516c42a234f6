import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EventType } from '../events/catalogue.js';
import type { StoredEvent } from '../store/event-store.js';

/**
 * Turns events into read-model rows. It writes only through the transaction it is given, which
 * also moves the projector's checkpoint: the read model and its position commit together.
 *
 * A projector implements `applyBatch` (set-based: a few statements per batch, whatever its size)
 * or `apply` (one event at a time); `applyEvents` calls whichever it has. Either way the rows it
 * leaves are the same as applying the events one by one, in order.
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
  apply?(event: StoredEvent, trx: Transaction<Database>): Promise<void>;
  /** The events given are all handled by the projector, in log order. */
  applyBatch?(events: readonly StoredEvent[], trx: Transaction<Database>): Promise<void>;
}

/** Applies the events this projector handles, in order, through `trx`. */
export async function applyEvents(projector: Projector, events: readonly StoredEvent[], trx: Transaction<Database>): Promise<void> {
  const handled = events.filter((e) => projector.handles.has(e.type as EventType));
  if (handled.length === 0) return;
  if (projector.applyBatch) return projector.applyBatch(handled, trx);
  if (!projector.apply) throw new Error(`projector '${projector.name}' has neither apply nor applyBatch`);
  for (const event of handled) await projector.apply(event, trx);
}
