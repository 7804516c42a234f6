import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { migrations } from '../../src/db/migrations/index.js';
import { createServerDatabase } from '../support/test-database.js';

/** Migration 0011 on a database that already holds counter-numbered attempts (att_1, att_2, …). */
describe('migration 0011: random delivery attempt ids', () => {
  let handle: DatabaseHandle;
  let drop = async () => {};

  beforeAll(async () => {
    const serverUrl = process.env.DATABASE_URL;
    if (serverUrl) {
      const created = await createServerDatabase(serverUrl);
      drop = created.drop;
      handle = await openDatabase({ databaseUrl: created.url });
    } else {
      handle = await openDatabase({});
    }
  });
  afterAll(async () => {
    await handle?.close();
    await drop();
  });

  it('gives existing attempts random att_ ids, keeps their order, and shows the ids in analytics', async () => {
    const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } });
    const before = await migrator.migrateTo('0010_idempotency_expiry');
    expect(before.error).toBeUndefined();
    for (const [business, attempt] of [['biz_a', 1], ['biz_a', 2], ['biz_b', 1]] as const) {
      await sql`insert into webhook_attempts (message_id, webhook_id, business_id, attempt, attempted_at, duration_ms)
                values ('msg_m', ${`whk_${business}`}, ${business}, ${attempt}, now(), 5)`.execute(handle.db);
    }

    const after = await migrator.migrateToLatest();
    expect(after.error).toBeUndefined();
    const rows = (await sql<{ id: string; seq: number; business_id: string; attempt: number }>`
      select id, seq, business_id, attempt from webhook_attempts order by seq`.execute(handle.db)).rows;
    expect(rows.map((r) => [Number(r.seq), r.business_id, r.attempt])).toEqual([
      [1, 'biz_a', 1],
      [2, 'biz_a', 2],
      [3, 'biz_b', 1],
    ]);
    for (const { id } of rows) expect(id).toMatch(/^att_[A-Za-z0-9_-]{16,}$/);
    expect(new Set(rows.map((r) => r.id)).size).toBe(3);

    const view = (await sql<{ attempt_id: string }>`select attempt_id from analytics.webhook_attempts order by seq`.execute(handle.db)).rows;
    expect(view.map((v) => v.attempt_id)).toEqual(rows.map((r) => r.id));
    // New attempts need an id: the column has no default to fall back on.
    await expect(
      sql`insert into webhook_attempts (message_id, webhook_id, business_id, attempt, attempted_at, duration_ms) values ('msg_m', 'whk_biz_a', 'biz_a', 3, now(), 5)`.execute(handle.db),
    ).rejects.toThrow();
  });
});
