import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deferredWrite, readAheadOfWaitingWrites, sendWaitingWrites } from '../../src/db/deferred-writes.js';
import { openTestDatabase } from '../support/test-database.js';

let handle: Awaited<ReturnType<typeof openTestDatabase>>;

const insertItem = (name: string, n: number) => deferredWrite(CompiledQuery.raw('insert into deferred_items (name, n) values ($1, $2)', [name, n]));
/** Counts the items as its statement's snapshot sees them. */
const countItems = (label: string) => deferredWrite(CompiledQuery.raw('insert into deferred_counts (label, seen) select $1, count(*) from deferred_items', [label]));
const items = async () => (await sql<{ name: string; n: number }>`select name, n from deferred_items order by n`.execute(handle.db)).rows;

beforeAll(async () => {
  handle = await openTestDatabase();
  await sql`create table deferred_items (name text not null, n int primary key)`.execute(handle.db);
  await sql`create table deferred_counts (label text, seen int)`.execute(handle.db);
});
afterAll(() => handle?.close());
beforeEach(async () => {
  await sql`truncate deferred_items, deferred_counts`.execute(handle.db);
});

describe('deferred writes (src/db/deferred-writes.ts)', () => {
  it('travel together as one statement: each sees the snapshot from before all of them', async () => {
    await handle.db.transaction().execute(async (trx) => {
      await trx.executeQuery(insertItem('a', 1));
      await trx.executeQuery(insertItem('b', 2));
      await trx.executeQuery(countItems('with them'));
    });
    expect(await items()).toEqual([
      { name: 'a', n: 1 },
      { name: 'b', n: 2 },
    ]);
    // One statement: the count ran on the snapshot taken before the inserts of its statement.
    const counts = await sql<{ label: string; seen: number }>`select label, seen::int as seen from deferred_counts`.execute(handle.db);
    expect(counts.rows).toEqual([{ label: 'with them', seen: 0 }]);
  });

  it('are sent before any other statement of the transaction, which sees them', async () => {
    const seen = await handle.db.transaction().execute(async (trx) => {
      await trx.executeQuery(insertItem('a', 1));
      const read = await sql<{ n: number }>`select count(*)::int as n from deferred_items`.execute(trx);
      await trx.executeQuery(insertItem('b', 2));
      await sql`update deferred_items set name = upper(name)`.execute(trx);
      return read.rows[0]!.n;
    });
    expect(seen).toBe(1);
    expect(await items()).toEqual([
      { name: 'A', n: 1 },
      { name: 'B', n: 2 },
    ]);
  });

  it('number the parameters of each write apart, whatever their count', async () => {
    await handle.db.transaction().execute(async (trx) => {
      for (let n = 1; n <= 12; n++) await trx.executeQuery(insertItem(`item ${n}`, n));
    });
    expect(await items()).toEqual(Array.from({ length: 12 }, (_, i) => ({ name: `item ${i + 1}`, n: i + 1 })));
  });

  it('are dropped with a transaction that rolls back, and never reach the next one on the connection', async () => {
    await expect(
      handle.db.transaction().execute(async (trx) => {
        await trx.executeQuery(insertItem('lost', 1));
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    await handle.db.transaction().execute(async (trx) => {
      await trx.executeQuery(insertItem('kept', 2));
    });
    expect(await items()).toEqual([{ name: 'kept', n: 2 }]);
  });

  it('fail the transaction when one of them fails, leaving nothing of it', async () => {
    await sql`insert into deferred_items (name, n) values ('there', 1)`.execute(handle.db);
    await expect(
      handle.db.transaction().execute(async (trx) => {
        await trx.executeQuery(insertItem('fine', 2));
        await trx.executeQuery(insertItem('clash', 1)); // the primary key is taken
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await items()).toEqual([{ name: 'there', n: 1 }]);
  });

  it('go early with sendWaitingWrites, answered apart; later statements go after them, see them and keep their own order', async () => {
    const counted = await handle.db.transaction().execute(async (trx) => {
      await trx.executeQuery(insertItem('a', 1));
      await trx.executeQuery(insertItem('b', 2));
      const first = await sendWaitingWrites(trx);
      // Issued before the early writes are answered: they wait for them.
      const read = trx.executeQuery<{ n: number }>(CompiledQuery.raw('select count(*)::int as n from deferred_items'));
      await trx.executeQuery(insertItem('c', 3)); // deferred again, after the read
      const second = await sendWaitingWrites(trx);
      await trx.executeQuery(countItems('after both'));
      await Promise.all([first.answered, second.answered]);
      return (await read).rows[0]!.n;
    });
    expect(counted).toBe(2);
    expect(await items()).toEqual([
      { name: 'a', n: 1 },
      { name: 'b', n: 2 },
      { name: 'c', n: 3 },
    ]);
    const counts = await sql<{ label: string; seen: number }>`select label, seen::int as seen from deferred_counts`.execute(handle.db);
    expect(counts.rows).toEqual([{ label: 'after both', seen: 3 }]);
  });

  it('let a read marked to go ahead of them see the transaction without them, after what was sent early; they keep waiting, in order', async () => {
    const seen = await handle.db.transaction().execute(async (trx) => {
      const countAhead = () => trx.executeQuery<{ n: number }>(readAheadOfWaitingWrites(CompiledQuery.raw('select count(*)::int as n from deferred_items')));
      await trx.executeQuery(insertItem('a', 1));
      const early = await sendWaitingWrites(trx);
      await trx.executeQuery(insertItem('b', 2)); // waits
      const ahead = countAhead(); // after the early write, before the waiting one
      await trx.executeQuery(insertItem('c', 3)); // waits too
      const aheadAgain = await countAhead();
      await trx.executeQuery(countItems('with the waiting ones'));
      await early.answered;
      return [(await ahead).rows[0]!.n, aheadAgain.rows[0]!.n];
    });
    expect(seen).toEqual([1, 1]);
    expect(await items()).toEqual([
      { name: 'a', n: 1 },
      { name: 'b', n: 2 },
      { name: 'c', n: 3 },
    ]);
    const counts = await sql<{ label: string; seen: number }>`select label, seen::int as seen from deferred_counts`.execute(handle.db);
    // The writes that waited still went as one statement: the count among them saw only the early one.
    expect(counts.rows).toEqual([{ label: 'with the waiting ones', seen: 1 }]);
  });

  it('sent early and failing, reject their answer, every later statement of the transaction and its commit, leaving nothing', async () => {
    await sql`insert into deferred_items (name, n) values ('there', 1)`.execute(handle.db);
    let answered: Promise<unknown> | undefined;
    let later: Promise<unknown> | undefined;
    await expect(
      handle.db.transaction().execute(async (trx) => {
        await trx.executeQuery(insertItem('fine', 2));
        await trx.executeQuery(insertItem('clash', 1)); // the primary key is taken
        ({ answered } = await sendWaitingWrites(trx));
        // The answer comes with no other statement of the transaction sent: PostgreSQL ran them.
        await expect(answered).rejects.toThrow(/duplicate key/);
        later = trx.executeQuery(CompiledQuery.raw('select 1'));
        await later.catch(() => undefined);
      }),
    ).rejects.toThrow(/duplicate key/);
    await expect(later).rejects.toThrow(/duplicate key/);
    expect(await items()).toEqual([{ name: 'there', n: 1 }]);
  });

  it('run at once outside a transaction', async () => {
    await handle.db.executeQuery(insertItem('alone', 1));
    expect(await items()).toEqual([{ name: 'alone', n: 1 }]);
  });

  it('are sent before a savepoint, and a rollback to it undoes those after it', async () => {
    const trx = await handle.db.startTransaction().execute();
    await trx.executeQuery(insertItem('before', 1));
    const marked = await trx.savepoint('probe').execute();
    await marked.executeQuery(insertItem('after', 2));
    const back = await marked.rollbackToSavepoint('probe').execute();
    await back.executeQuery(insertItem('instead', 3));
    await back.commit().execute();
    expect(await items()).toEqual([
      { name: 'before', n: 1 },
      { name: 'instead', n: 3 },
    ]);
  });
});
