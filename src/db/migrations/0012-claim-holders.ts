import { type Migration, sql } from 'kysely';

/**
 * Claims name the process that holds them (`holder`, its `ProcessMark`), so another process takes
 * over the claims of one that died at once rather than after the lease; an idempotency claim also
 * has a token, so only the attempt that holds it can answer, release or store an answer for it.
 */
export const migration: Migration = {
  async up(db) {
    await sql`alter table idempotency_keys add column holder bigint, add column claim_token text`.execute(db);
    await sql`alter table webhook_messages add column holder bigint`.execute(db);
  },
};
