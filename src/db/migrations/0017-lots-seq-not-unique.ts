import { type Migration, sql } from 'kysely';

/**
 * `lots.seq` orders a customer's lots (`lots_customer`), nothing looks a lot up by it alone: its
 * unique index was one more index entry written by every lot's insert and every update of its
 * remaining points (an expiry, a debit), none of which can be HOT (`remaining` is in `lots_open`'s
 * predicate). Dropped; the identity still numbers the lots in order.
 */
export const migration: Migration = {
  async up(db) {
    await sql`alter table lots drop constraint if exists lots_seq_key`.execute(db);
  },
};
