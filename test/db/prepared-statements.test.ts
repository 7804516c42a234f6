import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { PreparedStatements } from '../../src/db/prepared-statements.js';
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
});
