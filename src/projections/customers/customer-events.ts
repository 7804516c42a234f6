import { streams } from '../../events/streams.js';
import type { EventStore, StoredEvent } from '../../store/event-store.js';
import type { Page } from '../page.js';

/**
 * A customer's raw events as the log holds them, a page at a time in stream order (auditors:
 * `GET /customers/{id}/stream`). `startingAfter` is the position of the last event seen.
 */
export function customerEvents(reads: Pick<EventStore, 'readStream'>) {
  return async (customerId: string, page: { limit: number; startingAfter: number | undefined }): Promise<Page<StoredEvent>> => {
    const events = await reads.readStream(streams.customer(customerId), {
      from: page.startingAfter === undefined ? 0 : page.startingAfter + 1,
      max: page.limit + 1,
    });
    return { items: events.slice(0, page.limit), hasMore: events.length > page.limit };
  };
}
