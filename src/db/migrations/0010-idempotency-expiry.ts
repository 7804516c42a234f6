import { type Migration, sql } from 'kysely';

export const migration: Migration = {
  async up(db) {
    // Every claim deletes a few records older than 24 hours (idempotency-store.ts): found by this index, not a scan.
    await sql`create index idempotency_keys_created_at on idempotency_keys (created_at)`.execute(db);
  },
};
