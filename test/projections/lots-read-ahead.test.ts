import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { withMetadata } from '../../src/commands/aggregate.js';
import type { CustomerEvent } from '../../src/commands/customer/customer-decider.js';
import { streams } from '../../src/events/streams.js';
import { newId } from '../../src/ids.js';
import { LotBook } from '../../src/projections/customers/lot-book.js';
import { customersProjector } from '../../src/projections/customers/customers-projector.js';
import { Projections } from '../../src/projections/projections.js';
import { rebuildProjection } from '../../src/projections/rebuild.js';
import { PROJECTORS } from '../../src/projectors.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { LotBookFixture } from '../support/lot-history.js';
import { openTestDatabase } from '../support/test-database.js';

/**
 * A rebuild's page reads the lots its debits name ahead of the page before's writes, and puts
 * what that page changed over them (`LotBook.readAhead`). Whatever the page boundaries, the
 * rebuilt rows must be the live projection's, row for row and in the same order.
 */
type TestDatabase = Awaited<ReturnType<typeof openTestDatabase>>;
let handle: TestDatabase;
let store: PostgresEventStore;

const BUSINESS = 'biz_read_ahead';
const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * One customer's lifecycle history, as the decider records it: every kind of event that reads
 * lots, each at its instant. Without `expiring`, no lot expires: then no page refreshes its
 * customers' next expiring points (a statement that sends the page's writes before the page
 * ends), so the next page's read really goes ahead of them.
 */
function historyOf(customer: string, expiring: boolean): Array<{ at: number; event: CustomerEvent }> {
  const expiry = (ms: number) => (expiring ? iso(ms) : null);
  const book = new LotBookFixture();
  const out: Array<{ at: number; event: CustomerEvent }> = [];
  const add = (at: number, event: CustomerEvent) => out.push({ at, event });
  const earn = (id: string, amount: number, at: number, availableAt: string | null, expiresAt: string | null) => {
    const times = book.credit(id, amount, iso(at), availableAt, expiresAt);
    add(at, { type: 'PointsEarned', data: { transaction_id: id, amount, balance: book.balance(), description: null, reference: null, metadata: {}, base_amount: amount, multiplier: 1, ...times } });
  };
  const deduct = (id: string, amount: number, at: number, recorded: boolean) => {
    const shares = book.debit(amount);
    add(at, { type: 'PointsDeducted', data: { transaction_id: id, amount, balance: book.balance(), description: null, reference: null, metadata: {}, ...(recorded ? { lots: shares } : {}) } } as CustomerEvent);
  };
  add(T0, { type: 'CustomerRegistered', data: { customer_id: customer, business_id: BUSINESS, email: `${customer}@example.com`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} } });
  earn(`txn_${customer}_a`, 100, T0 + 1000, null, expiry(T0 + 30 * DAY));
  earn(`txn_${customer}_p`, 50, T0 + 2000, iso(T0 + 5 * DAY), expiry(T0 + 60 * DAY));
  earn(`txn_${customer}_f`, 80, T0 + 3000, null, null);
  deduct(`txn_${customer}_d1`, 60, T0 + 4000, true);
  const redeemed = book.debit(30);
  add(T0 + 5000, { type: 'RewardRedeemed', data: { redemption_id: `red_${customer}`, reward_id: 'rew_1', reward_title: 'Coffee', reward_type: 'physical', points_cost: 30, reference: null, metadata: {}, balance: book.balance(), lots: redeemed } });
  book.giveBack(redeemed);
  add(T0 + 6000, { type: 'RedemptionCancelled', data: { transaction_id: `txn_${customer}_c`, redemption_id: `red_${customer}`, reward_id: 'rew_1', points_cost: 30, balance: book.balance(), lots: redeemed } });
  // A debit written before lots existed: no shares, planned from the customer's open lots.
  deduct(`txn_${customer}_legacy1`, 15, T0 + 7000, false);
  book.release(`txn_${customer}_p`);
  add(T0 + 5 * DAY, { type: 'PointsReleased', data: { transaction_id: `txn_${customer}_rel`, lot_transaction_id: `txn_${customer}_p`, amount: 50, balance: book.balance(), released_at: iso(T0 + 5 * DAY) } });
  earn(`txn_${customer}_b`, 40, T0 + 6 * DAY, null, expiry(T0 + 90 * DAY));
  deduct(`txn_${customer}_d2`, 35, T0 + 7 * DAY, true);
  if (expiring) {
    book.notice(`txn_${customer}_a`);
    const left = book.lots.find((l) => l.transactionId === `txn_${customer}_a`)!.remaining;
    add(T0 + 23 * DAY, { type: 'PointsExpiringNotified', data: { lot_transaction_id: `txn_${customer}_a`, amount: left, expires_at: iso(T0 + 30 * DAY) } });
  }
  book.reverse(`txn_${customer}_p`, { fromLot: 20, fromExpired: 0, fromBalance: [] });
  add(T0 + 24 * DAY, {
    type: 'PointsReversed',
    data: { transaction_id: `txn_${customer}_rev`, reversed_transaction_id: `txn_${customer}_p`, amount: 20, from_lot: 20, from_expired: 0, lots: [], balance: book.balance(), description: 'refund', reference: null, metadata: {} },
  });
  if (expiring) {
    const lost = book.expire(`txn_${customer}_a`);
    add(T0 + 30 * DAY, { type: 'PointsExpired', data: { transaction_id: `txn_${customer}_exp`, lots: [{ transaction_id: `txn_${customer}_a`, amount: lost }], amount: lost, pending: 0, balance: book.balance(), expired_at: iso(T0 + 30 * DAY) } });
  }
  deduct(`txn_${customer}_legacy2`, 5, T0 + 31 * DAY, false);
  earn(`txn_${customer}_g`, 7, T0 + 32 * DAY, null, null);
  deduct(`txn_${customer}_d3`, 12, T0 + 33 * DAY, true);
  return out;
}

async function rows(table: string, order: string): Promise<unknown[]> {
  const result = await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by ${sql.raw(order)}`.execute(handle.db);
  return result.rows.map((row) => JSON.parse(JSON.stringify(row)));
}

const readModels = async () => ({
  lots: await rows('lots', 'seq'),
  customers: await rows('customers', 'id'),
  ledger: await rows('ledger_entries', 'seq'),
});

beforeAll(async () => {
  handle = await openTestDatabase();
  store = new PostgresEventStore(handle.db);
  // Three customers' histories interleaved event by event, so a page holds several customers'
  // events and a debit names lots credited pages before, or in the page just before.
  const customers = ['cus_ra1', 'cus_ra2', 'cus_ra3', 'cus_ra4', 'cus_ra5'];
  const histories = customers.map((customer, n) => historyOf(customer, n < 2));
  for (let i = 0; histories.some((h) => i < h.length); i++) {
    for (const [c, history] of histories.entries()) {
      const step = history[i];
      if (!step) continue;
      const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(step.at) };
      await store.append([{ stream: streams.customer(customers[c]!), expected: i === 0 ? 'no_stream' : i - 1, events: withMetadata([step.event], ctx, newId) }]);
    }
  }
  await new Projections(handle.db, store, PROJECTORS).catchUp();
});
afterAll(() => handle?.close());

describe('a rebuild reading lots ahead of the page before', () => {
  it('rebuilds lots, customers and ledger row for row (seq included) at every page size', async () => {
    const live = await readModels();
    expect((live.lots as unknown[]).length).toBe(25);
    const readAhead = vi.spyOn(LotBook, 'readAhead');
    try {
      for (const batchSize of [1, 2, 3, 4, 6, 7]) {
        await rebuildProjection(handle, store, customersProjector, { batchSize });
        expect(await readModels(), `pages of ${batchSize}`).toEqual(live);
      }
      // Pages are pipelined (and so read ahead) only on a server: PGlite's one connection takes one page per transaction.
      if (handle.kind === 'postgres') expect(readAhead.mock.calls.length).toBeGreaterThan(10);
      else expect(readAhead).not.toHaveBeenCalled();
    } finally {
      readAhead.mockRestore();
    }
  });
});
