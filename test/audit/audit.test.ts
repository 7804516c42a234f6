import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditIsClean, formatAuditReport } from '../../src/audit/audit-report.js';
import { auditStore } from '../../src/audit/audit-store.js';
import { formatStatement, replayCustomer } from '../../src/audit/replay-customer.js';
import { streams } from '../../src/events/streams.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * `loyalty audit verify` and `audit replay`, in process on a store written through the real API;
 * the tampering is raw SQL, as an intruder (or a bug) would do it, undone after each test.
 */
describe.sequential('audit verify and replay', () => {
  let t: TestApp;
  let key: string;
  let silver: string;
  /** A customer with every kind of event: earns, a tier upgrade, a deduction, adjustments, a redemption and its cancellation. */
  let rich: string;
  let plain: string;

  const post = async (path: string, body: unknown) => {
    const response = await t.request('POST', `/api/v1${path}`, { key, body });
    expect(response.status, response.text).toBeLessThan(300);
    return response.body;
  };
  const points = (customer: string, type: string, amount: number) => post(`/customers/${customer}/points/transaction`, { type, amount });
  const audit = (customerId?: string) => auditStore(t.services.db, t.services.store, { customerId });

  beforeAll(async () => {
    t = await startTestApp();
    key = (await t.business()).private_key;
    await post('/tiers', { name: 'Bronze', points_threshold: 0, multiplier: 1 });
    silver = (await post('/tiers', { name: 'Silver', points_threshold: 500, multiplier: 1.5 })).id;
    const reward = (await post('/rewards', { title: 'Coffee', points_cost: 300, reward_type: 'digital', stock_quantity: 5 })).id;
    rich = (await post('/customers', { email: 'rich@example.com' })).id;
    plain = (await post('/customers', { email: 'plain@example.com' })).id;
    await points(rich, 'earn', 120);
    await points(rich, 'earn', 400);
    await points(rich, 'deduct', 50);
    await points(rich, 'adjust', -20);
    const redemption = (await post(`/customers/${rich}/redemptions`, { reward_id: reward })).id;
    await post(`/customers/${rich}/redemptions/${redemption}/cancel`, {});
    await points(plain, 'earn', 10);
  });
  afterAll(() => t?.close());

  it('finds a clean store clean, in one line', async () => {
    const report = await audit();
    expect(report.breaks).toEqual([]);
    expect(report.drifts).toEqual([]);
    expect(report.customers).toBe(2);
    expect(report.events).toBeGreaterThan(10);
    expect(formatAuditReport(report)).toMatch(/^Audit clean: \d+ events in \d+ streams, 2 customers;[^\n]*$/);
  });

  it('counts in the singular for one: 1 event, 1 stream, 1 customer, 1 problem', async () => {
    const one = { events: 1, streams: 1, customers: 1, breaks: [], drifts: [] };
    expect(formatAuditReport(one)).toMatch(/^Audit clean: 1 event in 1 stream, 1 customer;/);
    const drift = { customerId: 'cust_1', field: 'balance', log: 5, readModel: 4 };
    expect(formatAuditReport({ ...one, drifts: [drift] })).toMatch(/^Audit found 1 problem \(checked 1 event in 1 stream, 1 customer\):\n/);
    expect(formatAuditReport({ events: 2, streams: 3, customers: 0, breaks: [], drifts: [drift, drift] })).toMatch(
      /^Audit found 2 problems \(checked 2 events in 3 streams, 0 customers\):\n/,
    );
    const registered = replayCustomer((await t.services.store.readStream(streams.customer(plain))).slice(0, 1));
    expect(formatStatement(plain, registered)).toMatch(/^Statement of customer \S+ \(1 event\)\n/);
  });

  it('replays a customer: every event with the balance, lifetime totals and tier after it', async () => {
    const statement = replayCustomer(await t.services.store.readStream(streams.customer(rich)));
    expect(statement.map((l) => [l.type, l.balance, l.lifetime_earned, l.lifetime_redeemed, l.tier?.name ?? null])).toEqual([
      ['CustomerRegistered', 0, 0, 0, null],
      ['PointsEarned', 120, 120, 0, null],
      ['TierUpgraded', 120, 120, 0, 'Bronze'],
      ['PointsEarned', 520, 520, 0, 'Bronze'],
      ['TierUpgraded', 520, 520, 0, 'Silver'],
      ['PointsDeducted', 470, 520, 50, 'Silver'],
      ['PointsAdjusted', 450, 500, 50, 'Silver'],
      ['RewardRedeemed', 150, 500, 350, 'Silver'],
      ['RedemptionCancelled', 450, 500, 50, 'Silver'],
    ]);
    expect(statement.map((l) => l.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(statement[5]!.change).toBe('deduct 50');
    expect(statement[4]!.change).toBe('tier Bronze → Silver');
    expect(statement[4]!.tier).toEqual({ id: silver, name: 'Silver' });
    const text = formatStatement(rich, statement).split('\n');
    expect(text[0]).toBe(`Statement of customer ${rich} (9 events)`);
    expect(text[1]).toMatch(/^pos  recorded_at +event +change +balance  earned  redeemed  tier +lots \(points left\)$/);
    expect(text[8]).toMatch(/^  6  \S+  PointsAdjusted +adjust -20 +450 +500 +50  Silver +txn_\S+ 50, txn_\S+ 400$/);
    // The lots after each event: the deduction, the negative adjust and the redemption take the oldest
    // first (nothing expires here); the cancellation gives the redemption's shares back.
    expect(statement.map((l) => l.lots.map((lot) => lot.remaining))).toEqual([[], [120], [120], [120, 400], [120, 400], [70, 400], [50, 400], [0, 150], [50, 400]]);
    expect(statement.every((l) => l.pending === 0 && l.lifetime_expired === 0)).toBe(true);
  });

  it('names the stream and position of an event whose data was edited in the store, and the totals it no longer explains', async () => {
    const stream = streams.customer(rich);
    const edit = (amount: number) =>
      sql`update events set data = jsonb_set(data, '{amount}', to_jsonb(${amount}::int)) where stream_id = ${stream} and stream_position = 3`.execute(t.services.db);
    await edit(900);
    try {
      const report = await audit();
      expect(auditIsClean(report)).toBe(false);
      expect(report.breaks).toEqual([expect.objectContaining({ stream, position: 3 })]);
      expect(report.drifts).toContainEqual({ customerId: rich, field: 'lifetime_earned', log: 1000, readModel: 500 });
      expect(report.drifts).toContainEqual(expect.objectContaining({ customerId: rich, field: expect.stringMatching(/^ledger_entries\[.+\]\.amount$/), log: 900, readModel: 400 }));
      const text = formatAuditReport(report);
      expect(text).toContain(`broken chain  stream ${stream} position 3: stored hash`);
      expect(text).toContain(`drift         customer ${rich} lifetime_earned: log 1000, read model 500`);
      // Scoped to the other customer, the audit does not see it.
      expect(auditIsClean(await audit(plain))).toBe(true);
    } finally {
      await edit(400);
    }
    expect(auditIsClean(await audit())).toBe(true);
  });

  it('finds an event removed from the end of a stream', async () => {
    const stream = streams.customer(plain);
    const [last] = (
      await sql<Record<string, unknown>>`delete from events where stream_id = ${stream}
        and stream_position = (select max(stream_position) from events where stream_id = ${stream}) returning *`.execute(t.services.db)
    ).rows;
    const position = Number(last!.stream_position);
    try {
      const report = await audit(plain);
      expect(report.breaks).toEqual([expect.objectContaining({ stream, position, problem: expect.stringContaining(`ends at position ${position - 1}`) })]);
    } finally {
      await sql`insert into events overriding system value select * from jsonb_populate_record(null::events, ${JSON.stringify(last)}::jsonb)`.execute(t.services.db);
    }
    expect(auditIsClean(await audit(plain))).toBe(true);
  });

  it('names the customer and field of a balance edited in the read model', async () => {
    const setBalance = (balance: number) => t.services.db.updateTable('customers').set({ points_balance: balance }).where('id', '=', plain).execute();
    await setBalance(1_000_000);
    try {
      const report = await audit();
      expect(report.breaks).toEqual([]);
      expect(report.drifts).toEqual([{ customerId: plain, field: 'points_balance', log: 10, readModel: 1_000_000 }]);
      expect(formatAuditReport(report)).toMatch(new RegExp(`^Audit found 1 problem .*\\n  drift +customer ${plain} points_balance: log 10, read model 1000000$`));
    } finally {
      await setBalance(10);
    }
  });

  it('names ledger lines missing from or added to the read model', async () => {
    const [line] = await t.services.db.deleteFrom('ledger_entries').where('customer_id', '=', plain).returningAll().execute();
    try {
      const report = await audit(plain);
      expect(report.drifts).toEqual([{ customerId: plain, field: `ledger_entries[${line!.id}]`, log: 'earn 10', readModel: '(absent)' }]);
    } finally {
      await t.services.db.insertInto('ledger_entries').values({ ...line!, metadata: JSON.stringify(line!.metadata), lots: line!.lots === null ? null : JSON.stringify(line!.lots) }).execute();
    }
    expect(auditIsClean(await audit())).toBe(true);
  });
});
