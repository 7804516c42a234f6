import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/database.js';
import { openTestDatabase, STORE_KIND } from '../support/test-database.js';

describe('queries and transactions sharing the database', () => {
  let handle: DatabaseHandle;
  beforeAll(async () => {
    handle = await openTestDatabase();
    await sql`create table shared_connection_probe (n int not null)`.execute(handle.db);
  });
  afterAll(() => handle.close());

  it('a query asked for while a transaction is open neither sees its writes nor joins it', async () => {
    let outside: Promise<unknown[]> | undefined;
    const rolledBack = handle.db.transaction().execute(async (trx) => {
      await trx.insertInto('shared_connection_probe' as never).values({ n: 1 } as never).execute();
      outside = handle.db.selectFrom('shared_connection_probe' as never).selectAll().execute();
      await trx.insertInto('shared_connection_probe' as never).values({ n: 2 } as never).execute();
      throw new Error('roll back');
    });

    await expect(rolledBack).rejects.toThrow('roll back');
    expect(await outside).toEqual([]);
    const after = await sql<{ count: number }>`select count(*)::int as count from shared_connection_probe`.execute(handle.db);
    expect(after.rows[0]!.count).toBe(0);
  });

  // One connection, run on this thread: a chain of queries must not keep it from the work of other
  // event-loop tasks (requests received meanwhile), or nothing they do can be batched (issue #7).
  it.skipIf(STORE_KIND === 'postgres')('on PGlite, a chain of queries lets the queries of other event-loop tasks in between', async () => {
    const done: string[] = [];
    const query = async (label: string) => {
      await sql`select 1`.execute(handle.db);
      done.push(label);
    };
    const chain = new Promise<void>((resolve) =>
      setImmediate(() => void query('chain 1').then(() => query('chain 2')).then(resolve)),
    );
    const other = new Promise<void>((resolve) => setImmediate(() => void query('other').then(resolve)));

    await Promise.all([chain, other]);
    expect(done).toEqual(['chain 1', 'other', 'chain 2']);
  });
});
