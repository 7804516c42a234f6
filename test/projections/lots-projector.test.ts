import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import { withMetadata } from '../../src/commands/aggregate.js';
import type { CustomerEvent } from '../../src/commands/customer/customer-decider.js';
import { streams } from '../../src/events/streams.js';
import { customersProjector } from '../../src/projections/customers/customers-projector.js';
import { rebuildProjection } from '../../src/projections/rebuild.js';
import { dailyPointsProjector } from '../../src/projections/stats/daily-points-projector.js';
import { PROJECTORS } from '../../src/projectors.js';
import { Projections } from '../../src/projections/projections.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase } from '../support/test-database.js';
import { LotBookFixture } from '../support/lot-history.js';
import { evolveCustomer, initialCustomerState } from '../../src/commands/customer/customer-state.js';
import { decodeAll } from '../../src/events/decode.js';

type TestDatabase = Awaited<ReturnType<typeof openTestDatabase>>;
let handle: TestDatabase;
let store: PostgresEventStore;

const BUSINESS = 'biz_lots';
const CUSTOMER = 'cus_lots_a';
const DAY = 86_400_000;
const T0 = Date.parse('2026-01-10T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** Appends one customer event at `at` (the stream's next revision). */
let revision = -1;
async function append(at: number, events: CustomerEvent[]): Promise<void> {
  const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(at) };
  await store.append([{ stream: streams.customer(CUSTOMER), expected: revision < 0 ? 'no_stream' : revision, events: withMetadata(events, ctx, newId) }]);
  revision += events.length;
}

/**
 * A lifecycle history as the decider records it (shares and balances computed with the pure lot
 * functions): three credits (one pending, one expiring, one never), a debit across lots, a
 * release, a notice and an expiry, a redemption and its cancellation, a partial reversal, a
 * downgrade.
 */
async function appendHistory(): Promise<void> {
  const book = new LotBookFixture();
  await append(T0, [
    { type: 'CustomerRegistered', data: { customer_id: CUSTOMER, business_id: BUSINESS, email: 'a@example.com', phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} } },
  ]);
  const expiring = book.credit('txn_expiring', 100, iso(T0 + 1000), null, iso(T0 + 30 * DAY));
  await append(T0 + 1000, [{ type: 'PointsEarned', data: { transaction_id: 'txn_expiring', amount: 100, balance: book.balance(), description: null, reference: 'o-1', metadata: {}, base_amount: 100, multiplier: 1, ...expiring } }]);
  const pending = book.credit('txn_pending', 50, iso(T0 + 2000), iso(T0 + 5 * DAY), iso(T0 + 60 * DAY));
  await append(T0 + 2000, [{ type: 'PointsEarned', data: { transaction_id: 'txn_pending', amount: 50, balance: book.balance(), description: null, reference: null, metadata: {}, base_amount: 50, multiplier: 1, ...pending } }]);
  const forever = book.credit('evt_forever', 80, iso(T0 + 3000), null, null);
  await append(T0 + 3000, [
    { type: 'EventRecorded', data: { event_id: 'evt_forever', event_type: 'purchase', properties: {}, reference: null, base_points: 80, multiplier: 1, points_awarded: 80, balance: book.balance(), ...forever } },
  ]);
  // 60 from the soonest-expiring first (the pending lot is not spendable).
  const debit = book.debit(60);
  expect(debit).toEqual([{ transaction_id: 'txn_expiring', amount: 60 }]);
  await append(T0 + 4000, [{ type: 'PointsDeducted', data: { transaction_id: 'txn_d1', amount: 60, balance: book.balance(), description: null, reference: null, metadata: {}, lots: debit } }]);
  const redeemed = book.debit(30);
  await append(T0 + 5000, [
    { type: 'RewardRedeemed', data: { redemption_id: 'red_1', reward_id: 'rew_1', reward_title: 'Coffee', reward_type: 'physical', points_cost: 30, reference: null, metadata: {}, balance: book.balance(), lots: redeemed } },
  ]);
  book.giveBack(redeemed);
  await append(T0 + 6000, [{ type: 'RedemptionCancelled', data: { transaction_id: 'txn_c1', redemption_id: 'red_1', reward_id: 'rew_1', points_cost: 30, balance: book.balance(), lots: redeemed } }]);
  book.release('txn_pending');
  await append(T0 + 5 * DAY, [{ type: 'PointsReleased', data: { transaction_id: 'txn_rel', lot_transaction_id: 'txn_pending', amount: 50, balance: book.balance(), released_at: iso(T0 + 5 * DAY) } }]);
  book.notice('txn_expiring');
  await append(T0 + 23 * DAY, [{ type: 'PointsExpiringNotified', data: { lot_transaction_id: 'txn_expiring', amount: 40, expires_at: iso(T0 + 30 * DAY) } }]);
  // A partial reversal of the pending-then-released credit: 20 from its own lot.
  book.reverse('txn_pending', { fromLot: 20, fromExpired: 0, fromBalance: [] });
  await append(T0 + 24 * DAY, [
    { type: 'PointsReversed', data: { transaction_id: 'txn_rev', reversed_transaction_id: 'txn_pending', amount: 20, from_lot: 20, from_expired: 0, lots: [], balance: book.balance(), description: 'refund', reference: 'refund-1', metadata: {} } },
  ]);
  const lost = book.expire('txn_expiring');
  expect(lost).toBe(40);
  await append(T0 + 30 * DAY, [{ type: 'PointsExpired', data: { transaction_id: 'txn_exp', lots: [{ transaction_id: 'txn_expiring', amount: lost }], amount: lost, pending: 0, balance: book.balance(), expired_at: iso(T0 + 30 * DAY) } }]);
  const silver = { id: 'tier_silver', name: 'Silver', points_threshold: 100, multiplier: 1.5, benefits: [] };
  await append(T0 + 31 * DAY, [
    { type: 'TierUpgraded', data: { previous_tier: null, new_tier: silver, lifetime_earned: 230 } },
    { type: 'TierDowngraded', data: { previous_tier: silver, new_tier: null, qualifying_points: 60, downgraded_at: iso(T0 + 31 * DAY) } },
  ]);
}

async function rows(table: string, order = 'seq'): Promise<any[]> {
  const result = await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by ${sql.raw(order)}`.execute(handle.db);
  return result.rows.map(({ seq: _seq, ...row }) => JSON.parse(JSON.stringify(row)));
}

beforeAll(async () => {
  handle = await openTestDatabase();
  store = new PostgresEventStore(handle.db);
  await appendHistory();
  await new Projections(handle.db, store, PROJECTORS).catchUp();
});
afterAll(() => handle?.close());

describe('lots read model (customers projector)', () => {
  it('keeps one row per credit with what remains, what was spent, expired and reversed', async () => {
    const lots = await rows('lots');
    expect(lots.map((l) => [l.transaction_id, Number(l.amount), Number(l.remaining), Number(l.spent), Number(l.expired), Number(l.reversed), l.status])).toEqual([
      ['txn_expiring', 100, 0, 60, 40, 0, 'expired'],
      ['txn_pending', 50, 30, 0, 0, 20, 'available'],
      ['evt_forever', 80, 80, 0, 0, 0, 'available'],
    ]);
    expect(lots.find((l) => l.transaction_id === 'txn_pending').available_at).toBeNull(); // released
    expect(lots.find((l) => l.transaction_id === 'txn_expiring').noticed).toBe(true);
  });

  it('shows pending, lifetime_expired, next_expiring and the downgrade on the customer (balance = earned − redeemed − expired − pending)', async () => {
    const customer = (await rows('customers', 'id')).find((c) => c.id === CUSTOMER);
    expect(Number(customer.points_balance)).toBe(110);
    expect(Number(customer.points_pending)).toBe(0);
    expect(Number(customer.lifetime_earned)).toBe(230 - 20);
    expect(Number(customer.lifetime_redeemed)).toBe(60);
    expect(Number(customer.lifetime_expired)).toBe(40);
    expect(Number(customer.next_expiring_amount)).toBe(30);
    expect(new Date(customer.next_expiring_at).toISOString()).toBe(iso(T0 + 60 * DAY));
    expect(customer.tier_id).toBeNull();
    expect(customer.tier).toBeNull();
    const changes = await rows('tier_changes');
    expect(changes.map((c) => [c.direction, c.previous_tier_id, c.new_tier_id, c.qualifying_points === null ? null : Number(c.qualifying_points)])).toEqual([
      ['upgrade', null, 'tier_silver', null],
      ['downgrade', 'tier_silver', null, 60],
    ]);
  });

  it('writes ledger lines release, reversal and expire, each with its running balance', async () => {
    const ledger = await rows('ledger_entries');
    expect(ledger.map((l) => [l.type, Number(l.amount), Number(l.balance)])).toEqual([
      ['earn', 100, 100],
      ['earn', 50, 100],
      ['event', 80, 180],
      ['deduct', 60, 120],
      ['redemption', 30, 90],
      ['redemption_cancelled', 30, 120],
      ['release', 50, 170],
      ['reversal', 20, 150],
      ['expire', 40, 110],
    ]);
  });

  it('counts per day: issued net of reversals, redeemed, expired; the analytics view adds the outstanding liability', async () => {
    const days = await rows('daily_points', 'day');
    const total = (k: string) => days.reduce((sum, d) => sum + Number(d[k]), 0);
    expect(total('issued')).toBe(230 - 20);
    expect(total('redeemed')).toBe(60);
    expect(total('expired')).toBe(40);
    const { rows: view } = await sql<{ outstanding_points: string }>`select outstanding_points from analytics.daily_points where business_id = ${BUSINESS} order by day`.execute(handle.db);
    expect(Number(view.at(-1)!.outstanding_points)).toBe(110); // nothing pending at the end: the balance
  });

  it('reproduces lots, customers, ledger and days row for row in a rebuild, whatever the batch size', async () => {
    const live = { lots: await rows('lots'), customers: await rows('customers', 'id'), ledger: await rows('ledger_entries'), days: await rows('daily_points', 'day') };
    for (const batchSize of [1, 10_000]) {
      await rebuildProjection(handle, store, customersProjector, { batchSize });
      await rebuildProjection(handle, store, dailyPointsProjector, { batchSize });
      expect({ lots: await rows('lots'), customers: await rows('customers', 'id'), ledger: await rows('ledger_entries'), days: await rows('daily_points', 'day') }).toEqual(live);
    }
  });

  it('indexes when the customer may next have due work: the earliest instant its events brought', async () => {
    const due = (await rows('customer_due', 'customer_id')).find((d) => d.customer_id === CUSTOMER);
    // The cancellation (T0 + 6 s) may have given points back to a lot that expires: it asks for a look at once,
    // earlier than the pending lot's release (day 5) or the expiring lot's notice (day 23).
    expect(new Date(due.due_at).toISOString()).toBe(iso(T0 + 6000));
  });
  it('shows pending points, out of the balance, while a lot is pending', async () => {
    const other = 'cus_lots_pending';
    const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(T0) };
    const events: CustomerEvent[] = [
      { type: 'CustomerRegistered', data: { customer_id: other, business_id: BUSINESS, email: null, phone: '+1 555 0100', first_name: null, last_name: null, external_reference: null, metadata: {} } },
      { type: 'PointsEarned', data: { transaction_id: 'txn_p1', amount: 70, balance: 0, description: null, reference: null, metadata: {}, base_amount: 70, multiplier: 1, available_at: iso(T0 + DAY), expires_at: null } },
      { type: 'PointsEarned', data: { transaction_id: 'txn_p2', amount: 5, balance: 5, description: null, reference: null, metadata: {}, base_amount: 5, multiplier: 1, available_at: null, expires_at: iso(T0 + 9 * DAY) } },
    ];
    await store.append([{ stream: streams.customer(other), expected: 'no_stream', events: withMetadata(events, ctx, newId) }]);
    await new Projections(handle.db, store, PROJECTORS).catchUp();
    const customer = (await rows('customers', 'id')).find((c) => c.id === other);
    expect([Number(customer.points_balance), Number(customer.points_pending), Number(customer.lifetime_earned)]).toEqual([5, 70, 75]);
    expect([Number(customer.next_expiring_amount), new Date(customer.next_expiring_at).toISOString()]).toEqual([5, iso(T0 + 9 * DAY)]);
    const lots = (await rows('lots')).filter((l) => l.customer_id === other);
    expect(lots.map((l) => [l.transaction_id, l.status, Number(l.remaining)])).toEqual([
      ['txn_p1', 'pending', 70],
      ['txn_p2', 'available', 5],
    ]);
  });


  it('keeps the lots the decider folds from debits and a cancellation written before lots existed (no shares recorded)', async () => {
    const legacy = 'cus_lots_legacy';
    // As written before lots: no times on credits, no shares on debits or the cancellation.
    const events = [
      { type: 'CustomerRegistered', data: { customer_id: legacy, business_id: BUSINESS, email: 'old@example.com', phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} } },
      { type: 'PointsEarned', data: { transaction_id: 'txn_old1', amount: 30, balance: 30, description: null, reference: null, metadata: {}, base_amount: 30, multiplier: 1 } },
      { type: 'PointsEarned', data: { transaction_id: 'txn_old2', amount: 50, balance: 80, description: null, reference: null, metadata: {}, base_amount: 50, multiplier: 1 } },
      { type: 'RewardRedeemed', data: { redemption_id: 'red_old', reward_id: 'rew_1', reward_title: 'Coffee', reward_type: 'physical', points_cost: 40, reference: null, metadata: {}, balance: 40 } },
      { type: 'PointsDeducted', data: { transaction_id: 'txn_old3', amount: 25, balance: 15, description: null, reference: null, metadata: {} } },
      { type: 'RedemptionCancelled', data: { transaction_id: 'txn_old4', redemption_id: 'red_old', reward_id: 'rew_1', points_cost: 40, balance: 55 } },
    ];
    for (const [n, event] of events.entries()) {
      const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(T0 + n * 1000) };
      // Appended one by one, so the cancellation's batch may not hold its redemption.
      await store.append([{ stream: streams.customer(legacy), expected: n === 0 ? 'no_stream' : n - 1, events: withMetadata([event as CustomerEvent], ctx, newId) }]);
      await new Projections(handle.db, store, PROJECTORS).catchUp();
    }
    const folded = (await store.readStream(streams.customer(legacy))).reduce(
      (state, e) => evolveCustomer(state, { ...(decodeAll([e])[0] as unknown as CustomerEvent), recordedAt: e.recordedAt }),
      initialCustomerState(),
    );
    const lots = (await rows('lots')).filter((l) => l.customer_id === legacy);
    expect(lots.map((l) => [l.transaction_id, Number(l.remaining), Number(l.spent), l.status])).toEqual(
      folded.lots.values().map((l) => [l.transactionId, l.remaining, l.spent, l.status]),
    );
    expect(lots.map((l) => Number(l.remaining))).toEqual([30, 25]); // the cancellation gave its 30 + 10 back where they came from
  });
});
