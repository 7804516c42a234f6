import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowSetInsert } from '../../src/projections/insert-rows.js';
import { openTestDatabase } from '../support/test-database.js';

let handle: Awaited<ReturnType<typeof openTestDatabase>>;

const COLUMNS = { name: 'text', n: 'bigint', x: 'numeric', flag: 'boolean', at: 'timestamptz', day: 'date', doc: 'jsonb' };

beforeAll(async () => {
  handle = await openTestDatabase();
  await sql`create table insert_rows_probe (seq bigint generated always as identity, name text, n bigint, x numeric, flag boolean,
    at timestamptz, day date, doc jsonb, note text)`.execute(handle.db);
});
afterAll(() => handle?.close());

describe('rowSetInsert (one array per column, spread by unnest)', () => {
  it('stores every value as written, in order, whatever characters its text holds', async () => {
    const awkward = ['plain', 'with "quotes"', 'back\\slash', '{braces},commas', 'NULL', '', '  spaced  ', 'üñí ✓ 🎉', 'new\nline\ttab', '\\"'];
    const rows = awkward.map((name, i) => ({
      name,
      n: i === 3 ? null : 2 ** 40 + i,
      x: String(1.5 + i),
      flag: i % 2 === 0,
      at: i % 3 === 0 ? new Date(Date.UTC(2026, 0, 1, 0, 0, i)) : `2026-01-01T00:00:0${i}.000Z`,
      day: '2026-11-25',
      doc: i === 0 ? null : i === 1 ? undefined : { name, list: [1, [2, 'three'], { four: null }], quote: '"\\' },
    }));
    await handle.db.transaction().execute((trx) => rowSetInsert('insert_rows_probe', COLUMNS, { also: { note: sql`'also'` } })(trx, rows));

    const { rows: stored } = await sql<Record<string, unknown>>`
      select name, n::text as n, x::text as x, flag, extract(epoch from at)::int as at, day::text as day, doc, note
      from insert_rows_probe order by seq`.execute(handle.db);
    expect(stored).toEqual(
      rows.map((row, i) => ({
        name: row.name,
        n: row.n === null ? null : String(row.n),
        x: row.x,
        flag: row.flag,
        at: Date.UTC(2026, 0, 1, 0, 0, i) / 1000,
        day: '2026-11-25',
        doc: row.doc ?? null,
        note: 'also',
      })),
    );
  });

  it('inserts nothing for no rows, and runs its conflict clause for rows already there', async () => {
    await handle.db.transaction().execute((trx) => rowSetInsert('insert_rows_probe', COLUMNS)(trx, []));
    await sql`create unique index insert_rows_probe_name on insert_rows_probe (name)`.execute(handle.db);
    // One inserter, compiled on its first run, serves every later one with its own rows.
    const upsert = rowSetInsert('insert_rows_probe', { name: 'text', n: 'bigint' }, { onConflict: sql`on conflict (name) do update set n = excluded.n` });
    await handle.db.transaction().execute((trx) => upsert(trx, [{ name: 'plain', n: 7 }]));
    await handle.db.transaction().execute((trx) => upsert(trx, [{ name: 'fresh', n: 5 }, { name: 'fresh2', n: 9 }]));
    await handle.db.transaction().execute((trx) => upsert(trx, [{ name: 'fresh', n: 8 }]));
    const { rows } = await sql<{ name: string; n: string }>`select name, n::text as n from insert_rows_probe where name in ('plain', 'fresh', 'fresh2') order by name`.execute(
      handle.db,
    );
    expect(rows).toEqual([
      { name: 'fresh', n: '8' },
      { name: 'fresh2', n: '9' },
      { name: 'plain', n: '7' },
    ]);
  });
});
