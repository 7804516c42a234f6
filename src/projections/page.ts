import type { SelectQueryBuilder } from 'kysely';
import { errors } from '../errors.js';

/** A page request of a list endpoint (CONTRACT.md §4): oldest first, keyset on `seq`. */
export interface PageRequest {
  limit: number;
  startingAfter?: string | undefined;
  /** Only rows whose `created_at` is after / before these instants (both exclusive). */
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

/**
 * Runs a list query one page at a time: `seq` is the table's insertion order, and the cursor is the
 * id of the last item seen, so the cost is the same on page 1 and page 10,000.
 * `cursorSeq` finds the cursor row's seq within the same scope (business, customer, …). A creation
 * window filters the rows on `created_at`; the keyset stays `seq`. `around` wraps the limited query
 * (one customer's page read as a lateral subquery of its row, say: see `customerQueries`).
 */
export async function fetchPage<Row extends { seq: number }>(
  query: SelectQueryBuilder<any, any, Row>,
  page: PageRequest,
  cursorSeq: (id: string) => Promise<number | undefined>,
  around: (limited: SelectQueryBuilder<any, any, Row>) => SelectQueryBuilder<any, any, Row> = (limited) => limited,
): Promise<Page<Row>> {
  let q = query;
  if (page.createdAfter) q = q.where('created_at' as never, '>', page.createdAfter as never);
  if (page.createdBefore) q = q.where('created_at' as never, '<', page.createdBefore as never);
  if (page.startingAfter !== undefined) {
    const seq = await cursorSeq(page.startingAfter);
    if (seq === undefined) {
      throw errors.validation([{ path: 'starting_after', message: `no item with id '${page.startingAfter}' in this list` }]);
    }
    q = q.where('seq' as never, '>', seq as never);
  }
  const rows = await around(q.orderBy('seq' as never).limit(page.limit + 1)).execute();
  return { items: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}
