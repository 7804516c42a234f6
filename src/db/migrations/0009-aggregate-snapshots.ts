import { type Migration, sql } from 'kysely';

export const migration: Migration = {
  async up(db) {
    // A cache of folded aggregate states (src/commands/snapshot-store.ts): losing it costs time, never correctness.
    await sql`
      create table aggregate_snapshots (
        stream_id text primary key,
        state_version integer not null,
        revision bigint not null,
        state jsonb not null,
        taken_at timestamptz not null
      )`.execute(db);
  },
};
