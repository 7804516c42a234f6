import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import { withMetadata } from '../../src/commands/aggregate.js';
import { type CustomerCommand, type CustomerEvent, customerDecider } from '../../src/commands/customer/customer-decider.js';
import { streams } from '../../src/events/streams.js';
import type { TierDefinition } from '../../src/events/program-events.js';
import { customersProjector } from '../../src/projections/customers/customers-projector.js';
import { rebuildProjection } from '../../src/projections/rebuild.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase } from '../support/test-database.js';

type TestDatabase = Awaited<ReturnType<typeof openTestDatabase>>;
let handle: TestDatabase;
let store: PostgresEventStore;

const BUSINESS = 'biz_batch';
const TIERS: TierDefinition[] = [
  { tier_id: 'tier_bronze', name: 'Bronze', points_threshold: 0, multiplier: 1, benefits: [], metadata: {} },
  { tier_id: 'tier_silver', name: 'Silver', points_threshold: 300, multiplier: 1.5, benefits: ['lounge'], metadata: {} },
];

/** Two customers' histories in one append, decided by the service's decider: every kind of line the customers projector writes. */
async function appendHistories(): Promise<void> {
  const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date() };
  const writes = ['cus_batch_a', 'cus_batch_b'].map((customerId, c) => {
    let state = customerDecider.initialState();
    const decided: CustomerEvent[] = [];
    const run = (command: CustomerCommand) => {
      for (const event of customerDecider.decide(command, state)) {
        state = customerDecider.evolve(state, event);
        decided.push(event);
      }
    };
    const points = (pointsType: 'earn' | 'deduct' | 'adjust', amount: number, n: number) =>
      run({ type: 'RecordPoints', pointsType, transactionId: `txn_${c}_${n}`, amount, applyMultiplier: true, description: `#${n}`, reference: null, metadata: { n }, tiers: TIERS });
    run({ type: 'RegisterCustomer', customerId, businessId: BUSINESS, profile: { email: `${customerId}@example.com`, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} } });
    for (let n = 0; n < 40; n++) {
      points('earn', 7 + n + c, n); // crosses Silver's threshold: a TierUpgraded in the middle, then multiplied earns
      if (n % 5 === 0) points('deduct', 3, 1000 + n);
      if (n % 7 === 0) points('adjust', -2, 2000 + n);
      if (n === 20) run({ type: 'UpdateCustomer', changes: { first_name: `Name ${c}` } });
      if (n % 9 === 0) {
        const eventType = { event_type_id: 'evt_visit', name: 'visit', display_name: 'Visit', default_points: n === 9 ? 0 : 5, rules: [], metadata: {} };
        run({ type: 'RecordEvent', eventId: `evt_${c}_${n}`, eventType, properties: { n }, reference: null, tiers: TIERS });
      }
    }
    return { stream: streams.customer(customerId), expected: 'no_stream' as const, events: withMetadata(decided, ctx, newId) };
  });
  await store.append(writes);
}

/** The customers projector's tables, every column but `seq`, in `seq` order. */
async function customerModels(): Promise<Record<string, unknown[]>> {
  const tables: Record<string, unknown[]> = {};
  for (const table of customersProjector.tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by seq`.execute(handle.db);
    tables[table] = rows.map(({ seq: _seq, ...row }) => JSON.parse(JSON.stringify(row)));
  }
  return tables;
}

beforeAll(async () => {
  handle = await openTestDatabase();
  store = new PostgresEventStore(handle.db);
  await appendHistories();
});
afterAll(() => handle?.close());

describe('customers projector, set-based', () => {
  it('leaves the same rows from one batch holding every event as from one event per batch, each ledger line with its running balance', async () => {
    await rebuildProjection(handle, store, customersProjector, { batchSize: 1 });
    const oneByOne = await customerModels();
    await rebuildProjection(handle, store, customersProjector, { batchSize: 10_000 });
    const oneBatch = await customerModels();
    expect(oneBatch).toEqual(oneByOne);

    const ledger = oneBatch.ledger_entries as Array<{ customer_id: string; type: string; amount: string; balance: string }>;
    const customers = oneBatch.customers as Array<{ id: string; points_balance: string; lifetime_earned: string; lifetime_redeemed: string; tier_id: string; first_name: string }>;
    expect(customers).toHaveLength(2);
    expect(oneBatch.tier_changes).toHaveLength(4); // each customer: none → Bronze on the first earn, then Silver
    for (const customer of customers) {
      const lines = ledger.filter((l) => l.customer_id === customer.id);
      expect(lines.length).toBeGreaterThan(50);
      // balance_after of each line is the previous one's plus the line's signed amount.
      let running = 0;
      for (const line of lines) {
        running += ['deduct', 'redemption'].includes(line.type) ? -Number(line.amount) : Number(line.amount);
        expect(Number(line.balance)).toBe(running);
      }
      expect(Number(customer.points_balance)).toBe(running);
      const earned = lines.filter((l) => ['earn', 'adjust', 'event'].includes(l.type)).reduce((sum, l) => sum + Number(l.amount), 0);
      const redeemed = lines.filter((l) => l.type === 'deduct').reduce((sum, l) => sum + Number(l.amount), 0);
      expect(Number(customer.lifetime_earned)).toBe(earned);
      expect(Number(customer.lifetime_redeemed)).toBe(redeemed);
      expect(customer.tier_id).toBe('tier_silver');
      expect(customer.first_name).toMatch(/^Name /);
    }
  });
});

describe('customers projector, a batch with no profile or tier event', () => {
  it('inserts its new customers with their balance, totals, pending points and last change already in, as batches of one event leave them', async () => {
    const own = await openTestDatabase();
    try {
      const ownStore = new PostgresEventStore(own.db);
      const states = new Map<string, ReturnType<typeof customerDecider.initialState>>();
      // Each step its own append at its own time: the customer's `updated_at` is its last balance change's.
      const step = async (customerId: string, at: string, command: CustomerCommand) => {
        let state = states.get(customerId) ?? customerDecider.initialState();
        const decided = customerDecider.decide(command, state);
        for (const event of decided) state = customerDecider.evolve(state, event);
        states.set(customerId, state);
        const ctx = { businessId: BUSINESS, actor: 'test', requestId: null, idempotencyKey: null, now: new Date(at) };
        await ownStore.append([{ stream: streams.customer(customerId), expected: 'any' as const, events: withMetadata(decided, ctx, newId) }]);
      };
      const points = (pointsType: 'earn' | 'deduct' | 'adjust', amount: number, id: string, times: { availableAt?: string; expiresAt?: string } = {}): CustomerCommand => ({
        type: 'RecordPoints', pointsType, transactionId: id, amount, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers: [], ...times,
      });
      const profile = { email: null, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} };
      for (const [c, customerId] of ['cus_plain_a', 'cus_plain_b'].entries()) {
        await step(customerId, '2026-01-01T00:00:00.000Z', { type: 'RegisterCustomer', customerId, businessId: BUSINESS, profile });
        await step(customerId, '2026-01-01T01:00:00.000Z', points('earn', 10 + c, `txn_plain_${c}_1`));
        await step(customerId, '2026-01-01T02:00:00.000Z', points('earn', 5, `txn_plain_${c}_2`, { availableAt: '2030-01-01T00:00:00.000Z', expiresAt: '2031-01-01T00:00:00.000Z' }));
        await step(customerId, '2026-01-01T03:00:00.000Z', points('deduct', 3, `txn_plain_${c}_3`));
        if (c === 0) await step(customerId, '2026-01-01T04:00:00.000Z', points('adjust', -1, `txn_plain_${c}_4`));
      }
      const models = async () => (await sql<Record<string, unknown>>`select * from customers order by seq`.execute(own.db)).rows.map(({ seq: _seq, ...row }) => JSON.parse(JSON.stringify(row)));

      await rebuildProjection(own, ownStore, customersProjector, { batchSize: 1 });
      const oneByOne = await models();
      await rebuildProjection(own, ownStore, customersProjector, { batchSize: 10_000 });
      expect(await models()).toEqual(oneByOne);
      expect(oneByOne).toMatchObject([
        { id: 'cus_plain_a', points_balance: 6, lifetime_earned: 14, lifetime_redeemed: 3, points_pending: 5, updated_at: '2026-01-01T04:00:00.000Z', next_expiring_amount: 5 },
        { id: 'cus_plain_b', points_balance: 8, lifetime_earned: 16, lifetime_redeemed: 3, points_pending: 5, updated_at: '2026-01-01T03:00:00.000Z', next_expiring_amount: 5 },
      ]);
    } finally {
      await own.close();
    }
  });
});
