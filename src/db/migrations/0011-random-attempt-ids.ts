import { type Migration, sql } from 'kysely';

/**
 * Delivery attempt ids were a global counter (`att_1`, and a second business's first attempt
 * `att_1001`), which told every business how many attempts the others had (CONTRACT.md §1). The
 * counter stays, renamed `seq`: the deliveries list's order and keyset, never shown. `id` is a
 * random `att_…` id; attempts made before this migration get one from `gen_random_uuid()`.
 */
export const migration: Migration = {
  async up(db) {
    await sql`alter table webhook_attempts rename column id to seq`.execute(db);
    await sql`alter table webhook_attempts add column id text`.execute(db);
    await sql`update webhook_attempts set id = 'att_' || replace(gen_random_uuid()::text, '-', '')`.execute(db);
    await sql`alter table webhook_attempts alter column id set not null`.execute(db);
    await sql`alter table webhook_attempts add constraint webhook_attempts_id_key unique (id)`.execute(db);

    // The view showed the counter as attempt_id; now the id, with seq (write order) beside it.
    await sql`drop view analytics.webhook_attempts`.execute(db);
    await sql`
      create view analytics.webhook_attempts as
      select
        id as attempt_id, message_id, webhook_id, business_id, attempt, attempted_at, status_code,
        duration_ms, response_excerpt, error, seq
      from webhook_attempts`.execute(db);
  },
};
