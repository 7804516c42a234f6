import { type Migration, sql } from 'kysely';

/**
 * A credit's `available_at` / `expires_at` on its ledger line and recorded event, and a reversal's
 * `reversed_transaction_id` on its line (CONTRACT.md §13): a listed transaction or event shows what
 * its POST answered. Lines written before are filled from the log by a projection rebuild; until
 * then they read null.
 */
export const migration: Migration = {
  async up(db) {
    await sql`
      alter table ledger_entries
        add column available_at timestamptz,
        add column expires_at timestamptz,
        add column reversed_transaction_id text
    `.execute(db);
    await sql`
      alter table recorded_events
        add column available_at timestamptz,
        add column expires_at timestamptz
    `.execute(db);
  },
};
