import { type Migration, sql } from 'kysely';

export const migration: Migration = {
  async up(db) {
    // One token bucket per API key, shared by every process on this database (server mode only;
    // the embedded store keeps its buckets in memory). Not a read model: losing it only refills.
    await sql`
      create table rate_limit_buckets (
        key_id text primary key,
        tokens double precision not null,
        refilled_at_ms bigint not null,
        granted boolean not null
      )`.execute(db);
  },
};
