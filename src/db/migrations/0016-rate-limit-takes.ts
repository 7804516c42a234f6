import { type Migration, sql } from 'kysely';

/**
 * Rate-limit buckets taken several requests at a time (rate-limit-store.ts): `taken` says how many
 * of the requests one statement asked for got a token. `granted` stays (with a default) so that
 * processes of the previous version, during a rolling deploy, keep writing it.
 *
 * Unlogged: a bucket is not worth a WAL record and a flush at every request's commit. After a crash
 * the table is empty, which only refills every bucket (a replica promoted after a failover starts
 * the same way).
 */
export const migration: Migration = {
  async up(db) {
    await sql`alter table rate_limit_buckets set unlogged`.execute(db);
    await sql`
      alter table rate_limit_buckets
        alter column granted set default true,
        add column taken integer not null default 0
    `.execute(db);
  },
};
