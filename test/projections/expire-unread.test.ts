import { sql, type Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import { withMetadata } from '../../src/commands/aggregate.js';
import type { CustomerEvent } from '../../src/commands/customer/customer-decider.js';
import type { Database } from '../../src/db/schema.js';
import { decodeAll } from '../../src/events/decode.js';
import { streams } from '../../src/events/streams.js';
import { customersProjector } from '../../src/projections/customers/customers-projector.js';
import { LotBook } from '../../src/projections/customers/lot-book.js';
import { Projections } from '../../src/projections/projections.js';
import { rebuildProjection } from '../../src/projections/rebuild.js';
import { PROJECTORS } from '../../src/projectors.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase } from '../support/test-database.js';

/**
 * The live projection expires a `PointsExpired`'s lots without reading them when no other event of
 * its batch names them (`LotBook.expireUnread`): each row computed from itself, checked against
 * what the event says it lost. These pin down that it leaves the rows a rebuild (which always goes
 * through the book) leaves, that a row disagreeing with the log is expired through the book
 * instead of left behind, and that the shortcut really reads nothing.
 */
const BUSINESS = 'biz_unread';
const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const EXPIRY = T0 + 30 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

let handle: Awaited<ReturnType<typeof openTestDatabase>>;
let store: PostgresEventStore;
const revisions = new Map<string, number>();

async function append(customer: string, at: number, events: CustomerEvent[]): Promise<void> {
  const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(at) };
  const revision = revisions.get(customer) ?? -1;
  await store.append([{ stream: streams.customer(customer), expected: revision < 0 ? 'no_stream' : revision, events: withMetadata(events, ctx, newId) }]);
  revisions.set(customer, revision + events.length);
}

const registered = (customer: string): CustomerEvent => ({
  type: 'CustomerRegistered',
  data: { customer_id: customer, business_id: BUSINESS, email: `${customer}@example.com`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} },
});
const earned = (id: string, amount: number, balance: number): CustomerEvent => ({
  type: 'PointsEarned',
  data: { transaction_id: id, amount, balance, description: null, reference: null, metadata: {}, base_amount: amount, multiplier: 1, available_at: null, expires_at: iso(EXPIRY) },
});
const expired = (id: string, lots: Array<[string, number]>, balance: number): CustomerEvent => ({
  type: 'PointsExpired',
  data: {
    transaction_id: id,
    lots: lots.map(([transaction_id, amount]) => ({ transaction_id, amount })),
    amount: lots.reduce((n, [, a]) => n + a, 0),
    pending: 0,
    balance,
    expired_at: iso(EXPIRY),
  },
});

async function rows(table: 'lots' | 'customers' | 'ledger_entries'): Promise<any[]> {
  const order = table === 'customers' ? 'id' : 'seq';
  const result = await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by ${sql.raw(order)}`.execute(handle.db);
  return result.rows.map(({ seq: _seq, ...row }) => JSON.parse(JSON.stringify(row)));
}
/** A lot's changing figures (bigint columns read as numbers, whichever driver). */
async function lot(id: string) {
  const l = (await rows('lots')).find((r) => r.transaction_id === id);
  return { remaining: Number(l.remaining), spent: Number(l.spent), expired: Number(l.expired), status: l.status, expiries: l.expiries };
}

/** The transaction, with the text of every statement sent through it kept in `sent` (`sql…execute` and `executeQuery` alike). */
function watched(trx: Transaction<Database>, sent: string[]): Transaction<Database> {
  const logged = <Q extends { sql: string }, R>(run: (query: Q, ...rest: unknown[]) => R) => (query: Q, ...rest: unknown[]) => {
    sent.push(query.sql);
    return run(query, ...rest);
  };
  return new Proxy(trx, {
    get(target, key) {
      if (key === 'executeQuery') return logged(target.executeQuery.bind(target) as never);
      if (key === 'getExecutor') {
        const executor = target.getExecutor();
        return () => new Proxy(executor, { get: (e, k) => (k === 'executeQuery' ? logged(e.executeQuery.bind(e) as never) : bound(e, k)) });
      }
      return bound(target, key);
    },
  });
}

/** A member of `target`, methods bound to it (its private fields are not the proxy's). */
function bound(target: object, key: string | symbol): unknown {
  const value = Reflect.get(target, key);
  return typeof value === 'function' ? value.bind(target) : value;
}

beforeAll(async () => {
  handle = await openTestDatabase();
  store = new PostgresEventStore(handle.db);
  await append('cus_a', T0, [registered('cus_a'), earned('txn_a1', 100, 100), earned('txn_a2', 40, 140)]);
  await append('cus_b', T0, [registered('cus_b'), earned('txn_b1', 70, 70)]);
  await append('cus_c', T0, [registered('cus_c'), earned('txn_c1', 25, 25)]);
  await new Projections(handle.db, store, PROJECTORS).catchUp();
});
afterAll(() => handle?.close());

describe('expiries projected without reading their lots', () => {
  it('reads no lot for an expiry no other event of the batch names, and leaves the rows a rebuild leaves', async () => {
    await append('cus_a', EXPIRY, [expired('txn_exp_a', [['txn_a1', 100], ['txn_a2', 40]], 0)]);
    const { events } = await store.readAll({ globalPosition: 0n }, 1000, { metadata: 'projection' });
    const batch = decodeAll(events).slice(-1);
    const sent: string[] = [];
    await handle.db
      .transaction()
      .execute(async (trx) => {
        const observed = watched(trx, sent);
        const book = await LotBook.load(observed, batch, { expireUnread: true });
        book.expire('cus_a', [{ transaction_id: 'txn_a1', amount: 100 }, { transaction_id: 'txn_a2', amount: 40 }]);
        await book.expireUnread(observed);
        expect(book.expiringChanges()).toEqual(new Map([['cus_a', { changed: ['txn_a1', 'txn_a2'], at: null, amount: 0 }]]));
        throw new Error('rolled back'); // only what was sent matters here
      })
      .catch((error: Error) => expect(error.message).toBe('rolled back'));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^\s*with matched as/);

    // Without the shortcut (a rebuild's book) the same batch reads its lots first.
    const read: string[] = [];
    await handle.db.transaction().execute(async (trx) => {
      await LotBook.load(watched(trx, read), batch);
    });
    expect(read.some((s) => /join lots l on/.test(s))).toBe(true);

    await new Projections(handle.db, store, PROJECTORS).catchUp();
    expect(await lot('txn_a1')).toEqual({ remaining: 0, spent: 0, expired: 100, status: 'expired', expiries: 1 });
    expect(await lot('txn_a2')).toEqual({ remaining: 0, spent: 0, expired: 40, status: 'expired', expiries: 1 });
    const live = { lots: await rows('lots'), customers: await rows('customers'), ledger: await rows('ledger_entries') };
    await rebuildProjection(handle, store, customersProjector, { batchSize: 10_000 });
    expect({ lots: await rows('lots'), customers: await rows('customers'), ledger: await rows('ledger_entries') }).toEqual(live);
  });

  it('expires a row that disagrees with the log through the book, as before the shortcut, beside a batch of rows that agree', async () => {
    // The read model says 60 are left of b1 where the log says 70 (a hand edit, say).
    await sql`update lots set remaining = 60, spent = 10 where transaction_id = 'txn_b1'`.execute(handle.db);
    await append('cus_b', EXPIRY, [expired('txn_exp_b', [['txn_b1', 70]], 0)]);
    await append('cus_c', EXPIRY, [expired('txn_exp_c', [['txn_c1', 25]], 0)]);
    await new Projections(handle.db, store, PROJECTORS).catchUp();
    // What the book makes of the row it reads: its 60 expire.
    expect(await lot('txn_b1')).toEqual({ remaining: 0, spent: 10, expired: 60, status: 'expired', expiries: 1 });
    expect(await lot('txn_c1')).toEqual({ remaining: 0, spent: 0, expired: 25, status: 'expired', expiries: 1 });
    const customers = await rows('customers');
    expect(customers.map((c) => [c.id, Number(c.points_balance), Number(c.lifetime_expired), c.next_expiring_at])).toEqual([
      ['cus_a', 0, 140, null],
      ['cus_b', 0, 70, null],
      ['cus_c', 0, 25, null],
    ]);
  });

  it('reads a version 1 expiry (one lot; whether it was pending, unsaid) through the book: a pending lot leaves points_pending', async () => {
    const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(T0) };
    const pendingEarn: CustomerEvent = {
      type: 'PointsEarned',
      data: { transaction_id: 'txn_d1', amount: 30, balance: 0, description: null, reference: null, metadata: {}, base_amount: 30, multiplier: 1, available_at: iso(T0 + 60 * DAY), expires_at: iso(EXPIRY) },
    };
    await append('cus_d', T0, [registered('cus_d'), pendingEarn]);
    await new Projections(handle.db, store, PROJECTORS).catchUp();
    expect(Number((await rows('customers')).find((c) => c.id === 'cus_d').points_pending)).toBe(30);
    // As an expiry before version 2 wrote it: the lot alone, no `pending`.
    const [v1] = withMetadata([expired('txn_exp_d', [['txn_d1', 30]], 0)], { ...ctx, now: new Date(EXPIRY) }, newId);
    const { lots: _lots, pending: _pending, ...rest } = v1!.data as Record<string, unknown>;
    const written = { ...v1!, data: { ...rest, lot_transaction_id: 'txn_d1' }, metadata: { ...v1!.metadata, event_version: 1 } };
    await store.append([{ stream: streams.customer('cus_d'), expected: revisions.get('cus_d')!, events: [written] }]);
    await new Projections(handle.db, store, PROJECTORS).catchUp();
    expect(await lot('txn_d1')).toEqual({ remaining: 0, spent: 0, expired: 30, status: 'expired', expiries: 1 });
    const customer = (await rows('customers')).find((c) => c.id === 'cus_d');
    expect([Number(customer.points_balance), Number(customer.points_pending), Number(customer.lifetime_expired)]).toEqual([0, 0, 30]);
  });
});
