import { type Migration, sql } from 'kysely';

/**
 * Points moved per business and UTC day (the dashboard's overview chart, `GET /api/v1/stats`): one
 * row per day with any movement, so a month of figures is at most 31 rows whatever the history's
 * length. A read model like the others (projector `daily-points`), rebuilt from the log.
 */
export const migration: Migration = {
  async up(db) {
    await sql`
      create table daily_points (
        business_id text not null,
        day date not null,
        issued bigint not null default 0,
        redeemed bigint not null default 0,
        expired bigint not null default 0,
        primary key (business_id, day)
      )`.execute(db);
  },
};
