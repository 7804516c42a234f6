import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildProjections } from '../../src/projections/rebuild.js';
import { PROJECTORS } from '../../src/projectors.js';
import { STORE_KIND } from '../support/test-database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const REBUILT = PROJECTORS.filter((p) => !p.reactor);

describe('projections rebuild: how the copies take the live tables’ place', () => {
  let t: TestApp;
  let key: string;
  const customers: string[] = [];
  const post = async (path: string, body: unknown) => {
    const response = await t.request('POST', `/api/v1${path}`, { key, body });
    expect(response.status, response.text).toBeLessThan(300);
    return response.body;
  };
  const query = async <R>(text: string) => (await sql<R>`${sql.raw(text)}`.execute(t.services.db)).rows;
  const one = async <R>(text: string) => (await query<R>(text))[0]!;
  let stages: string[] = [];
  /** A rebuild of every projector; `stages`: what its progress said, each stage once in a row. */
  const rebuild = () => {
    stages = [];
    return rebuildProjections(t.services.database, t.services.store, REBUILT, {
      batchSize: 20,
      onProgress: ({ stage }) => void (stages.at(-1) !== stage && stages.push(stage)),
    });
  };
  /** What a swap must keep of the live tables beyond their rows, and what it must change. */
  const liveObjects = async () => ({
    indexes: await query<{ tablename: string; indexname: string; indexdef: string }>(
      `select tablename, indexname, indexdef from pg_indexes where schemaname = 'public' and tablename in ('ledger_entries', 'lots', 'customers') order by 1, 2`,
    ),
    constraints: await query<{ conname: string; def: string }>(
      `select conname, pg_get_constraintdef(oid) as def from pg_constraint where conrelid in ('ledger_entries'::regclass, 'lots'::regclass) order by 1`,
    ),
    comment: (await one<{ c: string | null }>(`select obj_description('ledger_entries'::regclass, 'pg_class') as c`)).c,
    options: (await one<{ o: string[] | null }>(`select reloptions as o from pg_class where oid = 'ledger_entries'::regclass`)).o,
    view: (await one<{ oid: number }>(`select 'analytics.points_ledger'::regclass::oid::int as oid`)).oid,
  });
  const tableOid = async (table: string) => (await one<{ oid: number }>(`select '${table}'::regclass::oid::int as oid`)).oid;
  const scratchSchemas = async () => query<{ nspname: string }>(`select nspname from pg_namespace where nspname like 'loyalty_rebuild_%'`);

  beforeAll(async () => {
    t = await startTestApp();
    key = (await t.business()).private_key;
    for (let i = 0; i < 4; i++) {
      const id = (await post('/customers', { email: `swap-${i}@example.com` })).id as string;
      await post(`/customers/${id}/points/transaction`, { type: 'earn', amount: 100 * (i + 1) });
      await post(`/customers/${id}/points/transaction`, { type: 'deduct', amount: 10 });
      customers.push(id);
    }
  });
  afterAll(() => t?.close());

  it('renames the copies into place: names, grants, comment and options stay, and every view on them (ours, an analyst’s, one on that) shows the rebuilt rows', async () => {
    const reader = `loyalty_test_reader_${randomBytes(4).toString('hex')}`;
    await query(`create role ${reader}`);
    try {
      await query(`grant select on ledger_entries to ${reader}`);
      await query(`comment on table ledger_entries is 'the points ledger (it''s read by analysts)'`);
      await query(`alter table ledger_entries set (fillfactor = 90)`);
      await query(`create view public.analyst_ledger with (security_barrier = true) as select customer_id, amount, type from ledger_entries`);
      await query(`create view public.analyst_totals as select customer_id, sum(case when type = 'deduct' then -amount else amount end) as net from public.analyst_ledger group by customer_id`);
      await query(`grant select on public.analyst_totals to ${reader}`);
      const before = await liveObjects();
      const analystView = await tableOid('public.analyst_ledger');
      const ledgerTable = await tableOid('ledger_entries');
      const totals = await query<{ customer_id: string; net: string }>(`select customer_id, net from public.analyst_totals order by 1`);
      const ledger = await query<Record<string, unknown>>(`select * from ledger_entries order by seq`);
      // Damage that the rebuild must repair.
      await query(`delete from ledger_entries where customer_id = '${customers[0]}'`);

      const result = await rebuild();
      expect(result.swap).toBe('renamed');
      expect(result.rowsBecause).toBeUndefined();
      expect(stages).toEqual(['replay', 'indexes', 'swap']);
      expect(await tableOid('ledger_entries')).not.toBe(ledgerTable);
      expect(await query(`select * from ledger_entries order by seq`)).toEqual(ledger);
      expect(await liveObjects()).toEqual(before);
      // The views keep their identity (and with it the grants, and the views built on them).
      expect(await tableOid('public.analyst_ledger')).toBe(analystView);
      expect((await one<{ o: string[] }>(`select reloptions as o from pg_class where relname = 'analyst_ledger'`)).o).toEqual(['security_barrier=true']);
      expect(await query(`select customer_id, net from public.analyst_totals order by 1`)).toEqual(totals);
      expect(await one(`select count(*)::int as n from analytics.points_ledger`)).toEqual({ n: ledger.length });
      expect(await one(`select has_table_privilege('${reader}', 'ledger_entries', 'select') as a, has_table_privilege('${reader}', 'ledger_entries', 'insert') as b`)).toEqual({ a: true, b: false });
      expect(await one(`select has_table_privilege('${reader}', 'public.analyst_totals', 'select') as a`)).toEqual({ a: true });
      expect(await scratchSchemas()).toEqual([]);

      // Writes after it go on in the renamed tables, numbered after the replayed rows.
      await post(`/customers/${customers[1]}/points/transaction`, { type: 'earn', amount: 7 });
      const last = await one<{ amount: string; seq: string }>(`select amount, seq from ledger_entries order by seq desc limit 1`);
      expect(Number(last.amount)).toBe(7);
      expect(Number(last.seq)).toBeGreaterThan(Math.max(...ledger.map((l) => Number(l.seq))));
    } finally {
      await query(`drop view if exists public.analyst_totals, public.analyst_ledger`);
      await query(`revoke all on ledger_entries from ${reader}`);
      await query(`drop role ${reader}`);
    }
  });

  it('copies rows instead when something other than a view depends on a live table (a materialized view), which then stays as it was', async () => {
    await query(`create materialized view public.lots_snapshot as select customer_id, remaining from lots`);
    try {
      const lots = await tableOid('lots');
      const ledger = await tableOid('ledger_entries');
      const rows = await query(`select * from lots order by seq`);
      await query(`update lots set remaining = 0`);
      const result = await rebuild();
      expect(result.swap).toBe('rows');
      expect(result.rowsBecause).toBe('materialized view lots_snapshot depends on lots');
      expect(stages).toEqual(['replay', 'swap']); // no indexes to build: the live tables keep theirs
      expect([await tableOid('lots'), await tableOid('ledger_entries')]).toEqual([lots, ledger]);
      expect(await query(`select * from lots order by seq`)).toEqual(rows);
      expect(await one(`select count(*)::int as n from public.lots_snapshot`)).toEqual({ n: rows.length });
      expect(await scratchSchemas()).toEqual([]);
    } finally {
      await query(`drop materialized view public.lots_snapshot`);
    }
  });

  it.skipIf(STORE_KIND !== 'postgres')('copies rows instead when a reader holds a live table past the lock timeout, and the reader is never stopped', async () => {
    const analyst = new pg.Client({ connectionString: t.services.database.url });
    await analyst.connect();
    try {
      // A long read in an open transaction: it holds its lock on ledger_entries until it ends.
      await analyst.query('begin');
      await analyst.query('select count(*) from ledger_entries');
      const ledger = await tableOid('ledger_entries');
      const result = await rebuild();
      expect(result.swap).toBe('rows');
      expect(result.rowsBecause).toBe('a query held a live table past 500ms');
      expect(await tableOid('ledger_entries')).toBe(ledger);
      // The analyst's transaction was never interrupted.
      expect((await analyst.query('select count(*)::int as n from ledger_entries')).rows[0].n).toBeGreaterThan(0);
      await analyst.query('commit');
      // With the reader gone, the next rebuild renames again.
      expect((await rebuild()).swap).toBe('renamed');
    } finally {
      await analyst.end();
    }
  });
});
