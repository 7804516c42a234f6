import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { expectError } from '../support/expectations.js';

/**
 * The points lifecycle (CONTRACT.md §13) through the real app, with the app's clock moved by hand:
 * expiry, FIFO consumption, pending points, reversals, rolling tiers, the program policy. Due work
 * is done by the next command on the customer (due work first) or by the scheduler's entry point
 * (`commands.lifecycle.applyDue`), here called with the test clock's time.
 */
const DAY = 86_400_000;

describe('points lifecycle', () => {
  let t: TestApp;
  let now = new Date('2030-03-01T09:00:00.000Z');
  const clock = { now: () => now };
  const later = (days: number) => new Date(now.getTime() + days * DAY).toISOString();
  const advance = (days: number) => {
    now = new Date(now.getTime() + days * DAY);
  };

  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(() => t.close());

  const newCustomer = (b: ProvisionedBusiness) => t.newCustomer(b.private_key);
  const transact = (b: ProvisionedBusiness, customerId: string, body: Record<string, unknown>) =>
    t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, { key: b.private_key, body });
  async function ok(b: ProvisionedBusiness, customerId: string, body: Record<string, unknown>) {
    const response = await transact(b, customerId, body);
    expect(response.status, response.text).toBe(201);
    return response.body;
  }
  const reverse = (b: ProvisionedBusiness, customerId: string, txnId: string, body: Record<string, unknown> = {}) =>
    t.request('POST', `/api/v1/customers/${customerId}/transactions/${txnId}/reverse`, { key: b.private_key, body });
  const stream = async (b: ProvisionedBusiness, customerId: string) =>
    (await t.walk(b.private_key, `/api/v1/customers/${customerId}/stream?limit=200`)) as Array<{ type: string; data: any; recorded_at: string }>;
  const ofType = async (b: ProvisionedBusiness, customerId: string, type: string) => (await stream(b, customerId)).filter((e) => e.type === type);
  const applyDue = (b: ProvisionedBusiness, customerId: string) => t.services.commands.lifecycle.applyDue(b.business_id, customerId, { now });
  async function program(b: ProvisionedBusiness, body: Record<string, unknown>) {
    const response = await t.request('PATCH', '/api/v1/program', { key: b.private_key, body });
    expect(response.status, response.text).toBe(200);
    return response.body;
  }
  /** Runs a refused request and checks the customer's stream did not change. */
  async function refusedWithNothingRecorded(b: ProvisionedBusiness, customerId: string, run: () => Promise<void>) {
    const before = await stream(b, customerId);
    await run();
    expect(await stream(b, customerId)).toEqual(before);
  }

  it('expires only the remainder of a partly spent lot, at its expires_at, and once', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const expiresAt = later(10);
    const earn = await ok(b, c, { type: 'earn', amount: 100, expires_at: expiresAt });
    expect(earn).toMatchObject({ amount: 100, balance: 100, available_at: null, expires_at: expiresAt });
    await ok(b, c, { type: 'deduct', amount: 30 });

    advance(9);
    expect((await applyDue(b, c)).events.map((e) => e.type)).toEqual(['PointsExpiringNotified']); // inside the 7-day notice window
    advance(2);
    const applied = await applyDue(b, c);
    expect(applied.events).toEqual([
      {
        type: 'PointsExpired',
        data: { transaction_id: expect.stringMatching(/^txn_/), lots: [{ transaction_id: earn.id, amount: 70 }], amount: 70, pending: 0, balance: 0, expired_at: expiresAt },
      },
    ]);
    expect(applied.nextDueAt).toBeNull();
    expect((await applyDue(b, c)).events).toEqual([]);
    expect(await ofType(b, c, 'PointsExpired')).toHaveLength(1);
    // The next debit sees the expiry: nothing is left to spend.
    expectError(await transact(b, c, { type: 'deduct', amount: 1 }), 422, 'insufficient_points');
  });

  it('expires the lots of one instant together: one event and one ledger line per customer and instant', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const yearEnd = later(20);
    const first = await ok(b, c, { type: 'earn', amount: 100, expires_at: yearEnd });
    const sooner = await ok(b, c, { type: 'earn', amount: 30, expires_at: later(15) });
    advance(1);
    const second = await ok(b, c, { type: 'earn', amount: 50, expires_at: yearEnd });
    await ok(b, c, { type: 'earn', amount: 5 });
    await ok(b, c, { type: 'deduct', amount: 20 }); // from the sooner lot (soonest expiring first)

    advance(25); // the workers were away past both instants: each is its own expiry, in due order
    const applied = await applyDue(b, c);
    const expiries = applied.events.filter((e) => e.type === 'PointsExpired');
    expect(expiries.map((e) => e.data)).toEqual([
      { transaction_id: expect.stringMatching(/^txn_/), lots: [{ transaction_id: sooner.id, amount: 10 }], amount: 10, pending: 0, balance: 155, expired_at: sooner.expires_at },
      { transaction_id: expect.stringMatching(/^txn_/), lots: [{ transaction_id: first.id, amount: 100 }, { transaction_id: second.id, amount: 50 }], amount: 150, pending: 0, balance: 5, expired_at: yearEnd },
    ]);
    expect(await ofType(b, c, 'PointsExpiringNotified')).toEqual([]); // long past: expired, no notice first

    const lines = (await t.walk(b.private_key, `/api/v1/customers/${c}/transactions`)) as Array<{ type: string; amount: number; balance: number }>;
    expect(lines.filter((l) => l.type === 'expire').map((l) => [l.amount, l.balance])).toEqual([[10, 155], [150, 5]]);
    const lots = await t.walk(b.private_key, `/api/v1/customers/${c}/lots?all=true`);
    expect(lots.map((l: any) => [l.transaction_id, l.status, l.remaining])).toEqual([
      [first.id, 'expired', 0],
      [sooner.id, 'expired', 0],
      [second.id, 'expired', 0],
      [expect.any(String), 'available', 5],
    ]);
    const customer = await t.request('GET', `/api/v1/customers/${c}`, { key: b.private_key });
    expect(customer.body).toMatchObject({ points_balance: 5, lifetime_expired: 160, next_expiring: null });
  });

  it('consumes lots soonest-expiring first, never-expiring last, across three lots', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const late = await ok(b, c, { type: 'earn', amount: 100, expires_at: later(30) });
    const soon = await ok(b, c, { type: 'earn', amount: 100, expires_at: later(10) });
    const never = await ok(b, c, { type: 'earn', amount: 100 });
    await ok(b, c, { type: 'deduct', amount: 150 });
    await ok(b, c, { type: 'adjust', amount: -100 });
    const debits = [...(await ofType(b, c, 'PointsDeducted')), ...(await ofType(b, c, 'PointsAdjusted'))].map((e) => e.data.lots);
    expect(debits).toEqual([
      [
        { transaction_id: soon.id, amount: 100 },
        { transaction_id: late.id, amount: 50 },
      ],
      [
        { transaction_id: late.id, amount: 50 },
        { transaction_id: never.id, amount: 50 },
      ],
    ]);
    // Nothing left in the expiring lots: their expiry takes nothing.
    advance(31);
    expect((await applyDue(b, c)).events).toEqual([]);
    const last = await ok(b, c, { type: 'deduct', amount: 50 });
    expect(last.balance).toBe(0);
  });

  it('keeps pending points out of reach until released, then spends them', async () => {
    const b = await t.business();
    await program(b, { pending_days: 2 });
    const c = await newCustomer(b);
    const earn = await ok(b, c, { type: 'earn', amount: 100 });
    expect(earn).toMatchObject({ balance: 0, available_at: later(2), expires_at: null });
    await refusedWithNothingRecorded(b, c, async () => {
      expectError(await transact(b, c, { type: 'deduct', amount: 50 }), 422, 'insufficient_points');
    });

    advance(2);
    const deduct = await ok(b, c, { type: 'deduct', amount: 50 });
    expect(deduct.balance).toBe(50);
    const types = (await stream(b, c)).map((e) => e.type);
    expect(types.slice(-2)).toEqual(['PointsReleased', 'PointsDeducted']);
    const [released] = await ofType(b, c, 'PointsReleased');
    expect(released!.data).toMatchObject({ lot_transaction_id: earn.id, amount: 100, balance: 100, released_at: earn.available_at });
  });

  it('reverses part and then all of an available credit, refusing beyond it', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const earn = await ok(b, c, { type: 'earn', amount: 100 });
    const partial = await reverse(b, c, earn.id, { amount: 30, reference: 'refund-1', description: 'partly refunded' });
    expect(partial.status, partial.text).toBe(201);
    expect(partial.body).toMatchObject({ type: 'reversal', amount: 30, balance: 70, reference: 'refund-1', reversed_transaction_id: earn.id });
    const rest = await reverse(b, c, earn.id);
    expect(rest.status, rest.text).toBe(201);
    expect(rest.body).toMatchObject({ amount: 70, balance: 0 });
    await refusedWithNothingRecorded(b, c, async () => {
      const beyond = await reverse(b, c, earn.id, { amount: 1 });
      expectError(beyond, 422, 'reversal_exceeds_credit');
      expect(beyond.body.reversible_amount).toBe(0);
    });
    const reversals = await ofType(b, c, 'PointsReversed');
    expect(reversals.map((e) => [e.data.amount, e.data.from_lot])).toEqual([
      [30, 30],
      [70, 70],
    ]);
  });

  it('reverses part and then all of a pending credit out of pending points; nothing is left to release', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    await ok(b, c, { type: 'earn', amount: 20 });
    const earn = await ok(b, c, { type: 'earn', amount: 100, available_at: later(5) });
    expect(earn.balance).toBe(20);
    const partial = await reverse(b, c, earn.id, { amount: 40 });
    expect(partial.status, partial.text).toBe(201);
    expect(partial.body.balance).toBe(20); // taken from the pending lot, not the balance
    const rest = await reverse(b, c, earn.id);
    expect(rest.body).toMatchObject({ amount: 60, balance: 20 });
    advance(6);
    expect((await applyDue(b, c)).events).toEqual([]);
  });

  it('takes what the credit no longer holds from the balance, or refuses with insufficient_points; refuses debits and unknown ids', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const first = await ok(b, c, { type: 'earn', amount: 100 });
    const deduct = await ok(b, c, { type: 'deduct', amount: 100 }); // spends all of the first lot
    await refusedWithNothingRecorded(b, c, async () => {
      expectError(await reverse(b, c, first.id, { amount: 10 }), 422, 'insufficient_points');
      expectError(await reverse(b, c, deduct.id), 422, 'transaction_not_reversible');
      expectError(await reverse(b, c, 'txn_doesnotexist000000'), 404, 'transaction_not_found');
      expectError(await reverse(b, c, first.id, { amount: 0 }), 400, 'validation_error');
      expectError(await reverse(b, c, first.id, { amount: 5, extra: true }), 400, 'validation_error');
    });
    const second = await ok(b, c, { type: 'earn', amount: 50 });
    const taken = await reverse(b, c, first.id, { amount: 10 });
    expect(taken.status, taken.text).toBe(201);
    expect(taken.body.balance).toBe(40);
    const [reversed] = await ofType(b, c, 'PointsReversed');
    expect(reversed!.data).toMatchObject({ from_lot: 0, from_expired: 0, lots: [{ transaction_id: second.id, amount: 10 }] });
    // A reused reference is a duplicate, as for every transaction.
    await reverse(b, c, first.id, { amount: 5, reference: 'refund-9' });
    expectError(await reverse(b, c, first.id, { amount: 5, reference: 'refund-9' }), 409, 'duplicate_transaction');
  });

  it('gives the points of a cancelled redemption back to their lot; an expired lot expires them again at once', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const reward = await t.request('POST', '/api/v1/rewards', { key: b.private_key, body: { title: 'Mug', points_cost: 40, reward_type: 'physical' } });
    const earn = await ok(b, c, { type: 'earn', amount: 100, expires_at: later(3) });
    const redemption = await t.request('POST', `/api/v1/customers/${c}/redemptions`, { key: b.private_key, body: { reward_id: reward.body.id } });
    expect(redemption.status, redemption.text).toBe(201);
    advance(4);
    const cancelled = await t.request('POST', `/api/v1/customers/${c}/redemptions/${redemption.body.id}/cancel`, { key: b.private_key });
    expect(cancelled.status, cancelled.text).toBe(200);
    const expiries = await ofType(b, c, 'PointsExpired');
    expect(expiries.flatMap((e) => (e.data.lots as Array<{ transaction_id: string; amount: number }>).map((l) => [l.transaction_id, l.amount]))).toEqual([
      [earn.id, 60],
      [earn.id, 40],
    ]);
    expect(new Set(expiries.map((e) => e.data.transaction_id)).size).toBe(2);
    expect(expiries.at(-1)!.data.balance).toBe(0);
  });

  it('downgrades when the rolling window slides below the tier, not sooner than window_days after the change, and upgrades back on a credit', async () => {
    const b = await t.business();
    const silver = await t.request('POST', '/api/v1/tiers', { key: b.private_key, body: { name: 'Silver', points_threshold: 100, multiplier: 1 } });
    expect(silver.status).toBe(201);
    const c = await newCustomer(b);
    await ok(b, c, { type: 'earn', amount: 100 }); // lifetime mode: Silver
    const changedAt = later(20);
    advance(20);
    await program(b, { tier_qualification: { mode: 'rolling', window_days: 10 } });
    // The credit left the window long ago, but nobody is downgraded sooner than 10 days after the change.
    advance(5);
    expect((await applyDue(b, c)).events).toEqual([]);
    advance(6);
    const applied = await applyDue(b, c);
    expect(applied.events).toEqual([
      {
        type: 'TierDowngraded',
        data: {
          previous_tier: expect.objectContaining({ id: silver.body.id }),
          new_tier: null,
          qualifying_points: 0,
          downgraded_at: new Date(Date.parse(changedAt) + 10 * DAY).toISOString(),
        },
      },
    ]);
    const up = await ok(b, c, { type: 'earn', amount: 100 });
    expect(up.balance).toBe(200);
    expect((await ofType(b, c, 'TierUpgraded')).length).toBe(2);
    // The new credit leaves the window 10 days later: downgraded again then, at that instant.
    const creditAt = now.toISOString();
    expect(applied.nextDueAt).toBeNull();
    advance(10);
    const again = await applyDue(b, c);
    expect(again.events.map((e) => e.type)).toEqual(['TierDowngraded']);
    expect(again.events[0]!.data).toMatchObject({ downgraded_at: new Date(Date.parse(creditAt) + 10 * DAY).toISOString() });
  });

  it('downgrades at once when a reversal takes the rolling qualifying points below the tier', async () => {
    const b = await t.business();
    await t.request('POST', '/api/v1/tiers', { key: b.private_key, body: { name: 'Gold', points_threshold: 100, multiplier: 1 } });
    await program(b, { tier_qualification: { mode: 'rolling', window_days: 30 } });
    advance(31);
    const c = await newCustomer(b);
    const earn = await ok(b, c, { type: 'earn', amount: 120 });
    const reversal = await reverse(b, c, earn.id, { amount: 30 });
    expect(reversal.status, reversal.text).toBe(201);
    const types = (await stream(b, c)).map((e) => e.type);
    expect(types.slice(-2)).toEqual(['PointsReversed', 'TierDowngraded']);
    expect((await ofType(b, c, 'TierDowngraded'))[0]!.data).toMatchObject({ qualifying_points: 90, new_tier: null, downgraded_at: now.toISOString() });
  });

  it('reads and changes the program policy, validating it whole and changing nothing on a refusal', async () => {
    const b = await t.business();
    const initial = await t.request('GET', '/api/v1/program', { key: b.public_key });
    expect(initial.status).toBe(200);
    expect(initial.body).toEqual({
      points_expiry_days: null,
      pending_days: 0,
      expiring_notice_days: 7,
      tier_qualification: { mode: 'lifetime', window_days: null },
      updated_at: null,
    });
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ points_expiry_days: 0 }, 'points_expiry_days'],
      [{ pending_days: -1 }, 'pending_days'],
      [{ expiring_notice_days: 0 }, 'expiring_notice_days'],
      [{ tier_qualification: { mode: 'rolling' } }, 'tier_qualification.window_days'],
      [{ tier_qualification: { mode: 'rolling', window_days: 0 } }, 'tier_qualification.window_days'],
      [{ tier_qualification: { mode: 'weekly' } }, 'tier_qualification.mode'],
      [{ expiry_days: 3 }, ''],
    ];
    for (const [body, path] of refusals) {
      const response = await t.request('PATCH', '/api/v1/program', { key: b.private_key, body });
      expectError(response, 400, 'validation_error');
      if (path) expect(response.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(path);
    }
    expectError(await t.request('PATCH', '/api/v1/program', { key: b.public_key, body: { pending_days: 1 } }), 403, 'public_key_not_allowed');
    expect((await t.request('GET', '/api/v1/program', { key: b.private_key })).body).toEqual(initial.body);

    const changed = await program(b, { points_expiry_days: 365, tier_qualification: { mode: 'rolling', window_days: 90 } });
    expect(changed).toEqual({
      points_expiry_days: 365,
      pending_days: 0,
      expiring_notice_days: 7,
      tier_qualification: { mode: 'rolling', window_days: 90 },
      updated_at: now.toISOString(),
    });
    expect((await t.request('GET', '/api/v1/program', { key: b.private_key })).body).toEqual(changed);
    // Back to lifetime: the window goes with the mode.
    expect((await program(b, { tier_qualification: { mode: 'lifetime' } })).tier_qualification).toEqual({ mode: 'lifetime', window_days: null });
  });

  it('applies the expiry policy from availability to credits made after it changed; an explicit null never expires', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const before = await ok(b, c, { type: 'earn', amount: 10 });
    expect(before.expires_at).toBeNull();
    await program(b, { points_expiry_days: 30, pending_days: 5 });
    const after = await ok(b, c, { type: 'earn', amount: 10 });
    expect(after).toMatchObject({ available_at: later(5), expires_at: later(35), balance: 10 });
    const never = await ok(b, c, { type: 'adjust', amount: 10, expires_at: null, available_at: later(1) });
    expect(never).toMatchObject({ available_at: later(1), expires_at: null });
    const type = await t.request('POST', '/api/v1/event-types', { key: b.private_key, body: { name: 'visit', display_name: 'Visit', default_points: 5 } });
    expect(type.status).toBe(201);
    const event = await t.request('POST', '/api/v1/events', { key: b.private_key, body: { customer_id: c, event_type: 'visit', expires_at: later(8) } });
    expect(event.status, event.text).toBe(201);
    expect(event.body).toMatchObject({ points_awarded: 5, available_at: later(5), expires_at: later(8) });
  });

  it('refuses lot times in the past, malformed, not after available_at, or on a debit, naming the field and recording nothing', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    await ok(b, c, { type: 'earn', amount: 10 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'earn', amount: 5, expires_at: later(-1) }, 'expires_at'],
      [{ type: 'earn', amount: 5, expires_at: now.toISOString() }, 'expires_at'],
      [{ type: 'earn', amount: 5, available_at: later(-1) }, 'available_at'],
      [{ type: 'earn', amount: 5, expires_at: 'next tuesday' }, 'expires_at'],
      [{ type: 'earn', amount: 5, available_at: '2030-13-45T00:00:00Z' }, 'available_at'],
      [{ type: 'earn', amount: 5, available_at: later(3), expires_at: later(2) }, 'expires_at'],
      [{ type: 'adjust', amount: 5, available_at: later(3), expires_at: later(3) }, 'expires_at'],
      [{ type: 'deduct', amount: 5, expires_at: later(3) }, 'expires_at'],
      [{ type: 'adjust', amount: -5, available_at: later(3) }, 'available_at'],
    ];
    await refusedWithNothingRecorded(b, c, async () => {
      for (const [body, field] of cases) {
        const response = await transact(b, c, body);
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(field);
      }
      await t.request('POST', '/api/v1/event-types', { key: b.private_key, body: { name: 'shop', display_name: 'Shop', default_points: 5 } });
      const event = await t.request('POST', '/api/v1/events', { key: b.private_key, body: { customer_id: c, event_type: 'shop', available_at: later(-2) } });
      expectError(event, 400, 'validation_error');
      expect(event.body.details[0].path).toBe('available_at');
    });
  });

  it('answers a command preceded by due work with its own record, and replays that answer under its Idempotency-Key', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    await ok(b, c, { type: 'earn', amount: 40, available_at: later(1) });
    advance(2);
    const send = () =>
      t.request('POST', `/api/v1/customers/${c}/points/transaction`, {
        key: b.private_key,
        body: { type: 'deduct', amount: 15 },
        headers: { 'idempotency-key': `due-first-${c}` },
      });
    const first = await send();
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({ type: 'deduct', amount: 15, balance: 25 });
    const again = await send();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await stream(b, c)).map((e) => e.type).slice(-2)).toEqual(['PointsReleased', 'PointsDeducted']);
  });

  it('sends the expiring notice at once for a lot made inside the notice window, answering the earn itself', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const earn = await ok(b, c, { type: 'earn', amount: 25, expires_at: later(3) });
    expect(earn).toMatchObject({ type: 'earn', amount: 25 });
    const types = (await stream(b, c)).map((e) => e.type);
    expect(types.slice(-2)).toEqual(['PointsEarned', 'PointsExpiringNotified']);
    expect((await ofType(b, c, 'PointsExpiringNotified'))[0]!.data).toEqual({ lot_transaction_id: earn.id, amount: 25, expires_at: earn.expires_at });
    expect((await applyDue(b, c)).nextDueAt).toBe(earn.expires_at);
  });

  it('lists transactions and events as their POST answered them: lot times, and the credit a reversal names', async () => {
    const b = await t.business();
    const c = await newCustomer(b);
    const earn = await ok(b, c, { type: 'earn', amount: 80, available_at: later(1), expires_at: later(30) });
    const reversal = await reverse(b, c, earn.id, { amount: 30 });
    expect(reversal.status, reversal.text).toBe(201);
    const created = await t.request('POST', '/api/v1/event-types', { key: b.private_key, body: { name: 'visit', display_name: 'Visit', default_points: 5 } });
    expect(created.status, created.text).toBe(201);
    const event = await t.request('POST', '/api/v1/events', { key: b.private_key, body: { customer_id: c, event_type: 'visit', properties: {}, expires_at: later(60) } });
    expect(event.status, event.text).toBe(201);

    const lines = await t.walk(b.private_key, `/api/v1/customers/${c}/transactions`);
    expect(lines.find((l) => l.id === earn.id)).toEqual(earn);
    expect(lines.find((l) => l.id === reversal.body.id)).toEqual(reversal.body);
    expect(reversal.body).toMatchObject({ type: 'reversal', reversed_transaction_id: earn.id, available_at: null, expires_at: null });
    expect(earn).toMatchObject({ available_at: later(1), expires_at: later(30) });
    const events = await t.walk(b.private_key, `/api/v1/events?customer_id=${c}`);
    expect(events).toEqual([event.body]);
    expect(event.body.expires_at).toBe(later(60));
  });
});
