import type { LedgerEntryRow, RecordedEventRow, RedemptionRow } from '../db/schema.js';
import type { Checkpoint } from '../store/event-store.js';
import type { CatalogQueries } from './catalog/catalog-queries.js';
import type { CustomerQueries } from './customers/customers-queries.js';

/** What a reference was first used for, as the read models show it. */
export type Original =
  | { kind: 'transaction'; row: LedgerEntryRow | undefined }
  | { kind: 'event'; row: RecordedEventRow | undefined }
  | { kind: 'redemption'; row: RedemptionRow | undefined };

/**
 * The record a reused reference names (409 `duplicate_transaction`, CONTRACT.md §5), read once the
 * read models include the claim at `position` (read-your-writes: the original may have been
 * written a moment ago). Undefined for a kind of record no list shows.
 */
export function referenceOriginals(
  queries: { customers: Pick<CustomerQueries, 'ledgerEntry'>; catalog: Pick<CatalogQueries, 'event' | 'redemption'> },
  settle: (position: Checkpoint) => Promise<void>,
) {
  return async (businessId: string, record: { kind: string; id: string }, position: Checkpoint): Promise<Original | undefined> => {
    await settle(position);
    switch (record.kind) {
      case 'transaction':
        return { kind: 'transaction', row: await queries.customers.ledgerEntry(businessId, record.id) };
      case 'event':
        return { kind: 'event', row: await queries.catalog.event(businessId, record.id) };
      case 'redemption':
        return { kind: 'redemption', row: await queries.catalog.redemption(businessId, record.id) };
      default:
        return undefined;
    }
  };
}
