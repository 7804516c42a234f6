import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditIsClean } from '../../src/audit/audit-report.js';
import { auditStore } from '../../src/audit/audit-store.js';
import { projectionStatus } from '../../src/projections/projection-status.js';
import { PROJECTORS } from '../../src/projectors.js';
import { rebuildProjection, rebuildProjections } from '../../src/projections/rebuild.js';
import { START } from '../../src/store/event-store.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const REBUILT = PROJECTORS.filter((p) => !p.reactor);

/** Tables without a write-order `seq`, and the key that orders their rows instead. */
const ORDER: Record<string, string> = { daily_points: 'business_id, day' };

/** Every rebuilt table's rows in `seq` order, without `seq` (a replay numbers rows afresh, in the same order). */
async function readModels(t: TestApp): Promise<Record<string, unknown[]>> {
  const tables: Record<string, unknown[]> = {};
  for (const table of REBUILT.flatMap((p) => p.tables)) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by ${sql.raw(ORDER[table] ?? 'seq')}`.execute(t.services.db);
    tables[table] = rows.map(({ seq: _seq, ...row }) => JSON.parse(JSON.stringify(row)));
  }
  return tables;
}

describe('projections rebuild', () => {
  let t: TestApp;
  let key: string;
  const post = async (path: string, body: unknown) => {
    const response = await t.request('POST', `/api/v1${path}`, { key, body });
    expect(response.status, response.text).toBeLessThan(300);
    return response.body;
  };

  /** A new customer who earns, spends and moves up a tier: rows in customers, ledger_entries, tier_changes. */
  const newCustomer = async (label: string) => {
    const id = (await post('/customers', { email: `${label}@example.com` })).id as string;
    await post(`/customers/${id}/points/transaction`, { type: 'earn', amount: 600 });
    await post(`/customers/${id}/points/transaction`, { type: 'deduct', amount: 25 });
    return id;
  };

  beforeAll(async () => {
    t = await startTestApp();
    key = (await t.business()).private_key;
    await post('/tiers', { name: 'Bronze', points_threshold: 0, multiplier: 1 });
    await post('/tiers', { name: 'Silver', points_threshold: 500, multiplier: 1.25 });
    await post('/event-types', { name: 'visit', display_name: 'Visit', default_points: 7 });
    const reward = (await post('/rewards', { title: 'Mug', points_cost: 100, reward_type: 'physical', stock_quantity: 10 })).id;
    for (let i = 0; i < 6; i++) {
      const id = await newCustomer(`before-${i}`);
      await post('/events', { customer_id: id, event_type: 'visit' });
      const redemption = (await post(`/customers/${id}/redemptions`, { reward_id: reward })).id;
      if (i % 2 === 0) await post(`/customers/${id}/redemptions/${redemption}/cancel`, {});
    }
  });
  afterAll(() => t?.close());

  it('repairs damaged read models, ending with them as before plus the writes made during it, while the API keeps answering', async () => {
    const before = await readModels(t);
    const watched = (before.customers as Array<{ id: string }>)[0]!;
    const written: string[] = [];
    let reads = 0;
    // Damage in every rebuilt read model, which the rebuild must repair.
    await t.services.db.updateTable('businesses').set({ name: 'damaged' }).execute();
    await t.services.db.updateTable('customers').set({ points_balance: 999_999 }).where('id', '=', watched.id).execute();
    await t.services.db.deleteFrom('ledger_entries').where('customer_id', '=', watched.id).execute();
    await t.services.db.updateTable('rewards').set({ redeemed_count: 0 }).execute();
    await t.services.db.updateTable('daily_points').set({ issued: 0 }).execute();
    expect(await readModels(t)).not.toEqual(before);

    for (const projector of REBUILT) {
      let writesDone = false;
      const result = await rebuildProjection(t.services.database, t.services.store, projector, {
        batchSize: 10,
        // Mid-replay, from the second batch on: real writes and reads through the API, several at once.
        async onProgress({ done }) {
          if (writesDone || done < 20) return;
          writesDone = true;
          const label = `${projector.name}-${written.length}`;
          const [a, b, read] = await Promise.all([
            newCustomer(`${label}-a`),
            newCustomer(`${label}-b`),
            t.request('GET', `/api/v1/customers/${watched.id}`, { key }),
          ]);
          written.push(a, b);
          expect(read.status).toBe(200);
          expect(read.body.id).toBe(watched.id);
          reads++;
        },
      });
      expect(writesDone).toBe(true);
      expect(result.events).toBeGreaterThan(20);
    }
    // One more write: it answers once every read model (the swapped ones too) has caught up to it.
    written.push(await newCustomer('after'));

    const after = await readModels(t);
    expect(reads).toBe(REBUILT.length);
    // Everything that was there is still there, unchanged and in the same order…
    const { daily_points: daysBefore, ...listed } = before;
    for (const [table, rows] of Object.entries(listed)) expect(after[table]!.slice(0, rows.length), table).toEqual(rows);
    // …except the per-day sums, which the new customers' points moved (all written today).
    expect(after.daily_points, 'daily_points').toEqual(
      (daysBefore as Array<{ issued: number; redeemed: number }>).map((d) => ({ ...d, issued: d.issued + 600 * written.length, redeemed: d.redeemed + 25 * written.length })),
    );
    // …and the rows after it are exactly the new customers' own.
    const added = (table: string) => after[table]!.slice(before[table]!.length) as Array<Record<string, unknown>>;
    // (two customers were written at once, so their rows may interleave)
    const sorted = (ids: unknown[]) => [...ids].sort();
    expect(sorted(added('customers').map((c) => c.id))).toEqual(sorted(written));
    expect(added('customers').map((c) => [c.points_balance, c.lifetime_earned, c.lifetime_redeemed])).toEqual(written.map(() => [575, 600, 25]));
    expect(added('ledger_entries')).toHaveLength(2 * written.length);
    for (const id of written) {
      expect(added('ledger_entries').filter((l) => l.customer_id === id).map((l) => [l.type, l.amount])).toEqual([
        ['earn', 600],
        ['deduct', 25],
      ]);
    }
    expect(sorted(added('tier_changes').map((c) => c.customer_id))).toEqual(sorted(written));
    for (const table of ['tiers', 'event_types', 'rewards', 'redemptions', 'recorded_events', 'api_keys']) expect(added(table), table).toEqual([]);

    expect(auditIsClean(await auditStore(t.services.db, t.services.store))).toBe(true);
    for (const status of await projectionStatus(t.services.db, t.services.store, PROJECTORS)) expect(status, status.name).toMatchObject({ lag: 0 });
  });

  it('rebuilds every projector in one pass over the log, repairing each of them', async () => {
    const before = await readModels(t);
    const watched = (before.customers as Array<{ id: string }>)[0]!;
    await t.services.db.updateTable('api_keys').set({ name: 'damaged' }).execute();
    await t.services.db.updateTable('customers').set({ lifetime_earned: 1 }).where('id', '=', watched.id).execute();
    await t.services.db.deleteFrom('redemptions').execute();
    expect(await readModels(t)).not.toEqual(before);
    const logged = await t.services.store.countEvents(START);

    const result = await rebuildProjections(t.services.database, t.services.store, REBUILT, { batchSize: 7 });
    expect(result.projectors).toEqual(REBUILT.map((p) => p.name));
    expect(result.events).toBe(logged); // the whole log, replayed into all the copies
    expect(await readModels(t)).toEqual(before);
    for (const status of await projectionStatus(t.services.db, t.services.store, PROJECTORS)) expect(status, status.name).toMatchObject({ lag: 0 });
  });

  it('drops the copies of a rebuild that died halfway, and leaves those of one that still runs in another process, and a schema of another name', async () => {
    const schemas = async () =>
      (await sql<{ name: string }>`select nspname as name from pg_namespace where nspname like 'loyalty_rebuild_%' order by 1`.execute(t.services.db)).rows.map((r) => r.name);
    // What a rebuild killed with -9 leaves: its schema and copies, and no session holding its lock.
    await sql`create schema loyalty_rebuild_0dead000`.execute(t.services.db);
    await sql`create unlogged table loyalty_rebuild_0dead000.ledger_entries as select * from ledger_entries`.execute(t.services.db);
    // Someone's own schema that starts with the prefix but is not a name a rebuild makes.
    await sql`create schema loyalty_rebuild_backup`.execute(t.services.db);
    // On a server, another process's rebuild still running: its session holds the schema's lock.
    const other = t.services.database.kind === 'postgres' ? new pg.Client({ connectionString: t.services.database.url }) : null;
    let ended = false;
    if (other) {
      await other.connect();
      await other.query(`select pg_advisory_lock(hashtext('rebuild scratch:loyalty_rebuild_0c0ffee0'))`);
      await other.query('create schema loyalty_rebuild_0c0ffee0');
    }
    try {
      const result = await rebuildProjections(t.services.database, t.services.store, REBUILT, { batchSize: 50 });
      expect(result.abandonedDropped).toEqual(['loyalty_rebuild_0dead000']);
      expect(await schemas()).toEqual(other ? ['loyalty_rebuild_0c0ffee0', 'loyalty_rebuild_backup'] : ['loyalty_rebuild_backup']);
      // Once its owner is gone, the next rebuild drops it too.
      await other?.end();
      ended = true;
      const next = await rebuildProjections(t.services.database, t.services.store, REBUILT, { batchSize: 50 });
      expect(next.abandonedDropped).toEqual(other ? ['loyalty_rebuild_0c0ffee0'] : []);
      expect(await schemas()).toEqual(['loyalty_rebuild_backup']);
    } finally {
      if (!ended) await other?.end();
      await sql`drop schema if exists loyalty_rebuild_backup`.execute(t.services.db);
    }
  });

  it('refuses the webhooks reactor, whose replay would send webhooks again', async () => {
    const webhooks = PROJECTORS.find((p) => p.name === 'webhooks')!;
    await expect(rebuildProjection(t.services.database, t.services.store, webhooks)).rejects.toThrow(/reactor/);
    const leftovers = await sql<{ n: number }>`select count(*)::int as n from pg_namespace where nspname like 'loyalty_rebuild_%'`.execute(t.services.db);
    expect(leftovers.rows[0]!.n).toBe(0);
  });
});
