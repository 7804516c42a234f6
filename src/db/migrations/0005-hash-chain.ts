import { type Migration, sql } from 'kysely';

export const migration: Migration = {
  async up(db) {
    // The hash of each stream's last event, so an append chains its events without reading them.
    await sql`alter table streams add column last_hash text not null default ${sql.lit('0'.repeat(64))}`.execute(db);
  },
};
