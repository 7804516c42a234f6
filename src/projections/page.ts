import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.js';
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
 * (one customer's page read as a lateral subquery of its row: `customerScope` below).
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

/**
 * One customer's page of a table with a `customer_id` and a `(customer_id, seq)` index, read as a
 * lateral subquery of the customer's row (`around`, for `fetchPage`; the table's query filters on
 * `rowOf(table)`). The subquery sees the customer id as a parameter, so PostgreSQL plans it for an
 * average customer: the index read in order, for a page of rows. Given the id as a constant, it
 * planned a customer with most of the table (known from statistics) as a scan of the whole table in
 * `seq` order, and one on a table without statistics yet as a read of its every row and a sort:
 * 25 ms instead of 0.1 for a page of a 100,000-line ledger (docs/performance.md). The customer row
 * is the asking business's, so the page is too.
 */
export function customerScope(db: Kysely<Database>, businessId: string, customerId: string) {
  return {
    rowOf: (table: 'ledger_entries' | 'lots' | 'redemptions') => sql<boolean>`${sql.ref(`${table}.customer_id`)} = c.id`,
    around: <Row extends { seq: number }>(limited: SelectQueryBuilder<any, any, Row>): SelectQueryBuilder<any, any, Row> =>
      db
        .selectFrom('customers as c')
        .innerJoinLateral(limited.as('page'), (join) => join.onTrue())
        .selectAll('page')
        .where('c.business_id', '=', businessId)
        .where('c.id', '=', customerId)
        .orderBy('page.seq') as unknown as SelectQueryBuilder<any, any, Row>,
  };
}
