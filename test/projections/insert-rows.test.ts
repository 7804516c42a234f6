import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferredWrite } from '../../src/db/deferred-writes.js';
import { COPY_AT_ROWS, rowSetInsert, rowSetUpdate } from '../../src/projections/insert-rows.js';
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

describe('rowSetInsert from COPY_AT_ROWS rows (COPY … FROM STDIN)', () => {
  const AWKWARD = ['plain', 'tab\there', 'new\nline', 'carriage\rreturn', 'back\\slash', '\\N', '\\.', 'NULL', '', '"quoted"', 'üñí ✓ 🎉', '{a,b}'];
  const rowsOf = (count: number) =>
    Array.from({ length: count }, (_, i) => {
      const name = `${AWKWARD[i % AWKWARD.length]}#${i}`;
      return {
        name,
        n: i % 7 === 3 ? null : 2 ** 40 + i,
        x: String(1.5 + i),
        flag: i % 2 === 0,
        at: i % 3 === 0 ? new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)) : `2026-01-01T00:00:${String(i % 60).padStart(2, '0')}.000Z`,
        day: '2026-11-25',
        doc: i % 5 === 0 ? null : { name, nested: ['\t', '\n', '\\', '"'], n: i },
      };
    });
  const stored = async (table: string) =>
    (
      await sql<Record<string, unknown>>`select name, n::text as n, x::text as x, flag, at, day::text as day, doc from ${sql.table(table)} order by seq`.execute(
        handle.db,
      )
    ).rows;
  const statementsOf = async (table: string) =>
    (await sql<{ statement: string }>`select statement from copy_probe_statements where target = ${table} order by seq`.execute(handle.db)).rows.map((r) => r.statement);

  beforeAll(async () => {
    // Which statement put each row in: current_query() in a row trigger names it.
    await sql`create table copy_probe_statements (seq bigint generated always as identity, target text, statement text)`.execute(handle.db);
    await sql`create function copy_probe_log() returns trigger language plpgsql as $$
      begin insert into copy_probe_statements (target, statement) values (tg_table_name, split_part(current_query(), ' ', 1)); return new; end $$`.execute(handle.db);
    for (const table of ['copy_probe_copied', 'copy_probe_arrays']) {
      await sql`create table ${sql.table(table)} (seq bigint generated always as identity, name text, n bigint, x numeric, flag boolean, at timestamptz, day date, doc jsonb)`.execute(
        handle.db,
      );
      await sql`create trigger log_statement before insert on ${sql.table(table)} for each row execute function copy_probe_log()`.execute(handle.db);
    }
  });

  it('stores every value as the arrays do, in order, whatever characters its text holds', async () => {
    const rows = rowsOf(COPY_AT_ROWS + 7);
    const insertCopied = rowSetInsert('copy_probe_copied', COLUMNS);
    const insertArrays = rowSetInsert('copy_probe_arrays', COLUMNS);
    await handle.db.transaction().execute((trx) => insertCopied(trx, rows));
    await handle.db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += COPY_AT_ROWS - 1) await insertArrays(trx, rows.slice(i, i + COPY_AT_ROWS - 1));
    });

    const copied = await stored('copy_probe_copied');
    expect(copied).toEqual(await stored('copy_probe_arrays'));
    expect(copied.map((r) => r.name)).toEqual(rows.map((r) => r.name));
    expect(copied[1]).toMatchObject({ name: 'tab\there#1', doc: { name: 'tab\there#1', nested: ['\t', '\n', '\\', '"'], n: 1 } });
    expect(copied[3]).toMatchObject({ n: null, doc: { n: 3 } });
    expect(copied[5]!.doc).toBeNull();
    expect(new Set(await statementsOf('copy_probe_copied'))).toEqual(new Set(['copy']));
    expect(new Set(await statementsOf('copy_probe_arrays'))).toEqual(new Set(['insert']));
  });

  it('goes as a statement of its own when deferred, before the writes deferred with it, and fails its transaction when a row is refused', async () => {
    await sql`truncate copy_probe_copied, copy_probe_arrays, copy_probe_statements`.execute(handle.db);
    const rows = rowsOf(COPY_AT_ROWS);
    const insertCopied = rowSetInsert('copy_probe_copied', COLUMNS, { deferred: true });
    const insertArrays = rowSetInsert('copy_probe_arrays', COLUMNS, { deferred: true });
    const seen = await handle.db.transaction().execute(async (trx) => {
      await insertCopied(trx, rows);
      await insertArrays(trx, rows.slice(0, 3));
      await trx.executeQuery(deferredWrite(sql`update copy_probe_arrays set flag = not flag`.compile(trx)));
      return (await sql<{ copied: number; flags: boolean[] }>`select (select count(*)::int from copy_probe_copied) as copied, (select array_agg(flag order by seq) from copy_probe_arrays) as flags`.execute(trx)).rows[0];
    });
    // The update changed no flag: it went in one statement with the insert, whose rows it could not see.
    expect(seen).toEqual({ copied: COPY_AT_ROWS, flags: [true, false, true] });
    expect(new Set(await statementsOf('copy_probe_copied'))).toEqual(new Set(['copy']));
    expect(await statementsOf('copy_probe_arrays')).toEqual(['with', 'with', 'with']);

    await sql`alter table copy_probe_copied add constraint copy_probe_positive check (n is null or n > 0)`.execute(handle.db);
    const refused = rows.map((row, i) => (i === COPY_AT_ROWS - 1 ? { ...row, n: -1 } : row));
    await expect(
      handle.db.transaction().execute(async (trx) => {
        await insertCopied(trx, refused);
        await insertArrays(trx, rows.slice(0, 2));
        await sql`select 1`.execute(trx);
      }),
    ).rejects.toThrow(/copy_probe_positive/);
    expect((await sql<{ n: number }>`select count(*)::int as n from copy_probe_copied`.execute(handle.db)).rows[0]!.n).toBe(COPY_AT_ROWS);
    expect((await sql<{ n: number }>`select count(*)::int as n from copy_probe_arrays`.execute(handle.db)).rows[0]!.n).toBe(3);
  });
});

describe('rowSetUpdate', () => {
  it('sets the columns of the rows its keys find, and no other row', async () => {
    await sql`create table update_rows_probe (a text, b int, label text, doc jsonb, primary key (a, b))`.execute(handle.db);
    await sql`insert into update_rows_probe values ('x', 1, 'one', null), ('x', 2, 'two', null), ('y', 1, 'three', null)`.execute(handle.db);
    const update = rowSetUpdate('update_rows_probe', ['a', 'b'], { a: 'text', b: 'integer', label: 'text', doc: 'jsonb' });
    await handle.db.transaction().execute((trx) =>
      update.prepare(trx, [
        { a: 'x', b: 2, label: 'tab\t"two"', doc: { k: ['\\'] } },
        { a: 'y', b: 1, label: null, doc: null },
        { a: 'z', b: 9, label: 'nobody', doc: {} },
      ])(),
    );
    const { rows } = await sql`select a, b, label, doc from update_rows_probe order by a, b`.execute(handle.db);
    expect(rows).toEqual([
      { a: 'x', b: 1, label: 'one', doc: null },
      { a: 'x', b: 2, label: 'tab\t"two"', doc: { k: ['\\'] } },
      { a: 'y', b: 1, label: null, doc: null },
    ]);
  });
});
