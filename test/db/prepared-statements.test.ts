import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { PlanRefresh, PreparedStatements } from '../../src/db/prepared-statements.js';
import { createServerDatabase } from '../support/test-database.js';

const SERVER_URL = process.env.DATABASE_URL;

describe('PreparedStatements', () => {
  it('names a text from its threshold-th run on, and the same text always by the same name', () => {
    const prepared = new PreparedStatements(3);
    expect([prepared.nameOf('select 1'), prepared.nameOf('select 1')]).toEqual([undefined, undefined]);
    const name = prepared.nameOf('select 1');
    expect(name).toMatch(/^loyalty_\d+$/);
    expect(prepared.nameOf('select 1')).toBe(name);
    expect(prepared.nameOf('select 2')).toBeUndefined();
  });

  it('prepares nothing at threshold 0, and at most 500 texts', () => {
    const never = new PreparedStatements(0);
    for (let i = 0; i < 10; i++) expect(never.nameOf('select 1')).toBeUndefined();
    const capped = new PreparedStatements(1);
    const names = new Set(Array.from({ length: 600 }, (_, i) => capped.nameOf(`select ${i}`)));
    expect(names.has(undefined)).toBe(true);
    expect(names.size).toBe(501);
  });
});

/** What the server's session holds: the statements this connection prepared. */
const preparedOnServer = async (database: DatabaseHandle) =>
  (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(database.db)).rows.map((r) => r.statement);

describe.skipIf(!SERVER_URL)('prepared statements on a PostgreSQL server', () => {
  let drop: () => Promise<void>;
  let url: string;

  beforeAll(async () => {
    ({ url, drop } = await createServerDatabase(SERVER_URL!));
  });
  afterAll(() => drop?.());

  it('sends a statement run often enough as a named prepared statement, with its answers unchanged', async () => {
    const database = await openDatabase({ databaseUrl: url, poolSize: 1, prepareThreshold: 3 });
    try {
      const answers = [];
      for (let i = 1; i <= 5; i++) answers.push((await sql<{ n: number }>`select ${i}::int + 1 as n`.execute(database.db)).rows[0]!.n);
      expect(answers).toEqual([2, 3, 4, 5, 6]);
      expect(await preparedOnServer(database)).toContainEqual(expect.stringContaining('$1::int + 1 as n'));
    } finally {
      await database.close();
    }
  });

  it('prepares nothing with threshold 0', async () => {
    const database = await openDatabase({ databaseUrl: url, poolSize: 1, prepareThreshold: 0 });
    try {
      for (let i = 1; i <= 10; i++) await sql`select ${i}::int + 1 as n`.execute(database.db);
      expect(await preparedOnServer(database)).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('drops a connection’s cached plans when PlanRefresh says so: a plan made on a small table is made again once it grew', async () => {
    let now = 0;
    const setup = await openDatabase({ databaseUrl: url, poolSize: 1, prepareThreshold: 0 });
    const database = await openDatabase({ databaseUrl: url, poolSize: 1, prepareThreshold: 1, planRefresh: new PlanRefresh(() => now) });
    try {
      // Autovacuum off for it: an automatic ANALYZE after the 200,000 rows below would plan it again first.
      await sql`create table grows (id text primary key, n int) with (autovacuum_enabled = false)`.execute(setup.db);
      await sql`insert into grows select 'k' || g, g from generate_series(1, 3) g`.execute(setup.db);
      await sql`analyze grows`.execute(setup.db);
      const read = () => sql`select n from grows where id = any(${['k1', 'k2']}::text[])`.execute(database.db);
      for (let i = 0; i < 8; i++) await read(); // named loyalty_1 from its first run; a generic plan after five
      const plan = async () =>
        (await sql<{ 'QUERY PLAN': string }>`explain execute loyalty_1('{k1,k2}')`.execute(database.db)).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(await plan()).toMatch(/Seq Scan on grows/);
      // 200,000 more rows, and no ANALYZE: nothing in this database tells PostgreSQL to plan again.
      // (Not asserted here: on a server busy with DDL elsewhere, as the suite's other files make it,
      // a backend that falls behind the shared invalidation queue is reset, which drops every cached
      // plan at a moment nobody chose; CI saw it twice.) Without the refresh, the plan below stays the
      // sequential scan: the refresh is what this test holds.
      await sql`insert into grows select 'm' || g, g from generate_series(1, 200000) g`.execute(setup.db);
      now = 10_000;
      for (let i = 0; i < 8; i++) await read(); // five custom plans, then a generic one
      expect(await plan()).toMatch(/Index (Only )?Scan using grows_pkey|Bitmap Index Scan on grows_pkey/);
      expect((await read()).rows).toHaveLength(2);
    } finally {
      await database.close();
      await setup.close();
    }
  });
});

