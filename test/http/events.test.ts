import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';


describe('events', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());



  async function createType(key: string, body: Record<string, unknown>) {
    const response = await t.request('POST', '/api/v1/event-types', { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const record = (key: string, body: Record<string, unknown>) => t.request('POST', '/api/v1/events', { key, body });

  async function recorded(key: string, body: Record<string, unknown>) {
    const response = await record(key, body);
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  /** Balance and lifetime totals; they must satisfy the invariant. */
  async function totals(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}/summary`, { key });
    expect(response.status, response.text).toBe(200);
    const { balance, lifetime_earned, lifetime_redeemed } = response.body.points;
    expect(balance).toBe(lifetime_earned - lifetime_redeemed);
    expect(balance).toBeGreaterThanOrEqual(0);
    return response.body;
  }

  async function ledger(key: string, customerId: string) {
    const response = await t.request('GET', `/api/v1/customers/${customerId}/transactions?limit=200`, { key });
    expect(response.status, response.text).toBe(200);
    return response.body as Array<{ id: string; type: string; amount: number; balance: number; description: string | null }>;
  }

  const walk = (key: string, path: string) => t.walk(key, path);

  /** The contract's example: 1 point per whole currency unit spent, 2 per unit on orders of 100 or more, capped at 1000. */
  const PURCHASE = {
    name: 'purchase',
    display_name: 'Purchase',
    default_points: 0,
    rules: [
      { conditions: [{ property: 'amount', op: 'lt', value: 100 }], points_per_unit: 1, unit_property: 'amount' },
      { conditions: [{ property: 'amount', op: 'gte', value: 100 }], points_per_unit: 2, unit_property: 'amount', max_points: 1000 },
    ],
  };

  describe('recording an event', () => {
    it('answers 201 with the event, its points and the balance after it', async () => {
      const { private_key: key } = await t.business();
      await createType(key, { name: 'review', display_name: 'Review', default_points: 25 });
      const customerId = await t.newCustomer(key);
      const response = await record(key, { customer_id: customerId, event_type: 'review', properties: { stars: 5 }, reference: 'review-1' });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(/^evt_[A-Za-z0-9_-]{16,}$/),
        customer_id: customerId,
        event_type: 'review',
        properties: { stars: 5 },
        reference: 'review-1',
        points_awarded: 25,
        base_points: 25,
        multiplier: 1,
        balance: 25,
        available_at: null,
        expires_at: null,
        created_at: expect.stringMatching(ISO_MS),
      });
      const noReference = await recorded(key, { customer_id: customerId, event_type: 'review' });
      expect(noReference).toMatchObject({ properties: {}, reference: null, points_awarded: 25, balance: 50 });
      expect((await totals(key, customerId)).points).toEqual({ balance: 50, lifetime_earned: 50, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
    });

    it('follows the worked example: 1 per whole unit, 2 per unit from 100, capped', async () => {
      const { private_key: key } = await t.business();
      await createType(key, PURCHASE);
      const cases: Array<[number, number]> = [
        [0, 0],
        [0.99, 0],
        [1, 1],
        [42.5, 42],
        [99.99, 99],
        [100, 200],
        [100.5, 200], // whole units only: floor(100.5) × 2
        [250, 500],
        [499.99, 998],
        [500, 1000],
        [12_345.67, 1000],
      ];
      const customerId = await t.newCustomer(key);
      let balance = 0;
      for (const [i, [amount, points]] of cases.entries()) {
        const event = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount }, reference: `order-${i}` });
        balance += points;
        expect({ amount, base: event.base_points, awarded: event.points_awarded, balance: event.balance }).toEqual({
          amount,
          base: points,
          awarded: points,
          balance,
        });
      }
      expect((await totals(key, customerId)).points).toEqual({ balance, lifetime_earned: balance, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
    });

    it('adds the default points to every applying rule, reading nested properties', async () => {
      const { private_key: key } = await t.business();
      await createType(key, {
        name: 'order.completed',
        display_name: 'Order completed',
        default_points: 10,
        rules: [
          { conditions: [{ property: 'order.channel', op: 'in', value: ['app'] }], points: 5 },
          { conditions: [{ property: 'order.coupon', op: 'exists', value: false }], points: 3 },
          { points_per_unit: 1, unit_property: 'order.items', unit_size: 2 },
          { conditions: [{ property: 'order.total', op: 'gt', value: '100' }], points: 1000 }, // string vs number never holds
        ],
      });
      const customerId = await t.newCustomer(key);
      const app = await recorded(key, {
        customer_id: customerId,
        event_type: 'order.completed',
        properties: { order: { channel: 'app', items: 7, total: 500 } },
      });
      expect(app).toMatchObject({ base_points: 10 + 5 + 3 + 3, points_awarded: 21 });
      const web = await recorded(key, {
        customer_id: customerId,
        event_type: 'order.completed',
        properties: { order: { channel: 'web', coupon: 'SAVE', items: '7' } },
      });
      expect(web).toMatchObject({ base_points: 10, points_awarded: 10, balance: 31 });
    });

    it('matches a rule comparing an object with the same object sent in the event', async () => {
      const { private_key: key } = await t.business();
      // The very same literal in the rule and in the event: the rule must apply.
      const item = { colour: 'red', size: 'L' };
      await createType(key, {
        name: 'purchase',
        display_name: 'Purchase',
        default_points: 1,
        rules: [
          { conditions: [{ property: 'item', op: 'eq', value: item }], points: 10 },
          { conditions: [{ property: 'item', op: 'in', value: [item] }], points: 100 },
        ],
      });
      const customerId = await t.newCustomer(key);
      const event = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { item } });
      expect(event).toMatchObject({ base_points: 111, points_awarded: 111 });
    });

    it('multiplies by the tier held before the event, rounding down', async () => {
      const { private_key: key } = await t.business();
      await createType(key, PURCHASE);
      const silver = await t.request('POST', '/api/v1/tiers', { key, body: { name: 'Silver', points_threshold: 100, multiplier: 1.5 } });
      expect(silver.status).toBe(201);
      const customerId = await t.newCustomer(key);

      // No tier is held before this event: ×1, and the event reaches Silver.
      const first = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 150 } });
      expect(first).toMatchObject({ base_points: 300, multiplier: 1, points_awarded: 300, balance: 300 });
      const holder = await t.request('GET', `/api/v1/customers/${customerId}`, { key });
      expect(holder.body.tier).toMatchObject({ id: silver.body.id, name: 'Silver', multiplier: 1.5 });
      const stream = await t.request('GET', `/api/v1/customers/${customerId}/stream`, { key });
      const upgrades = stream.body.filter((e: { type: string }) => e.type === 'TierUpgraded');
      expect(upgrades).toHaveLength(1);
      expect(upgrades[0].data).toMatchObject({ previous_tier: null, new_tier: { id: silver.body.id }, lifetime_earned: 300 });

      // Silver is held now: ×1.5, floor(67 × 1.5) = 100.
      const second = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 67.9 } });
      expect(second).toMatchObject({ base_points: 67, multiplier: 1.5, points_awarded: 100, balance: 400 });

      const lines = await ledger(key, customerId);
      expect(lines.map((l) => [l.type, l.amount, l.balance])).toEqual([
        ['event', 300, 300],
        ['event', 100, 400],
      ]);
      expect((await totals(key, customerId)).points).toEqual({ balance: 400, lifetime_earned: 400, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
    });

    it('records an event worth 0 points without a ledger line', async () => {
      const { private_key: key } = await t.business();
      await createType(key, PURCHASE);
      await createType(key, { name: 'page.view', display_name: 'Page view', default_points: 0 });
      const customerId = await t.newCustomer(key);
      await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 10 } });

      const zero = await record(key, { customer_id: customerId, event_type: 'page.view', properties: { path: '/' }, reference: 'view-1' });
      expect(zero.status, zero.text).toBe(201);
      expect(zero.body).toMatchObject({ event_type: 'page.view', points_awarded: 0, base_points: 0, balance: 10 });
      const small = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 0.5 } });
      expect(small).toMatchObject({ points_awarded: 0, balance: 10 });

      const events = await walk(key, `/api/v1/events?customer_id=${customerId}`);
      expect(events.map((e) => e.id)).toEqual([expect.any(String), zero.body.id, small.id]);
      expect(events[1]).toEqual(zero.body);
      const lines = await ledger(key, customerId);
      expect(lines).toHaveLength(1);
      const s = await totals(key, customerId);
      expect(s.points).toEqual({ balance: 10, lifetime_earned: 10, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
      expect(s.recent_activity).toHaveLength(1);
      // The reference of a 0-point event is taken all the same.
      expectError(await record(key, { customer_id: customerId, event_type: 'page.view', reference: 'view-1' }), 409, 'duplicate_transaction');
    });

    it('answers 422 unknown_event_type for a type the business does not have, recording nothing', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      await createType(otherKey, { name: 'theirs', display_name: 'Theirs', default_points: 5 });
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 5 });
      const customerId = await t.newCustomer(key);
      for (const eventType of ['nothing', 'theirs', 'Purchase']) {
        expectError(await record(key, { customer_id: customerId, event_type: eventType, reference: 'r-1' }), 422, 'unknown_event_type');
      }
      expect(await walk(key, '/api/v1/events')).toEqual([]);
      // The reference was not taken by the refused attempts.
      expect((await record(key, { customer_id: customerId, event_type: 'purchase', reference: 'r-1' })).status).toBe(201);
    });

    it('answers 422 points_out_of_range for an event worth more than 1,000,000,000 points, recording nothing', async () => {
      const { private_key: key } = await t.business();
      await createType(key, { name: 'bulk', display_name: 'Bulk', default_points: 0, rules: [{ points_per_unit: 1_000_000, unit_property: 'n' }] });
      const customerId = await t.newCustomer(key);

      const tooMuch = await record(key, { customer_id: customerId, event_type: 'bulk', properties: { n: 10_000 }, reference: 'bulk-1' });
      expectError(tooMuch, 422, 'points_out_of_range');
      expect(await walk(key, `/api/v1/events?customer_id=${customerId}`)).toEqual([]);
      expect((await totals(key, customerId)).points).toEqual({ balance: 0, lifetime_earned: 0, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
      const stream = await t.request('GET', `/api/v1/customers/${customerId}/stream`, { key });
      expect(stream.body.map((e: { type: string }) => e.type)).toEqual(['CustomerRegistered']);

      // Exactly the limit is recorded, and the refused attempt did not take the reference.
      const atLimit = await record(key, { customer_id: customerId, event_type: 'bulk', properties: { n: 1000 }, reference: 'bulk-1' });
      expect(atLimit.status, atLimit.text).toBe(201);
      expect(atLimit.body).toMatchObject({ base_points: 1_000_000_000, points_awarded: 1_000_000_000, balance: 1_000_000_000 });
    });

    it('answers 404 customer_not_found for an unknown customer or another business’s', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 5 });
      await createType(otherKey, { name: 'purchase', display_name: 'Purchase', default_points: 5 });
      const theirs = await t.newCustomer(otherKey);
      expectError(await record(key, { customer_id: 'cust_doesnotexist00000000', event_type: 'purchase' }), 404, 'customer_not_found');
      expectError(await record(key, { customer_id: theirs, event_type: 'purchase' }), 404, 'customer_not_found');
      expect((await totals(otherKey, theirs)).points.balance).toBe(0);
    });

    it('refuses malformed requests with 400 validation_error', async () => {
      const { private_key: key } = await t.business();
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 5 });
      const customerId = await t.newCustomer(key);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ event_type: 'purchase' }, 'customer_id'],
        [{ customer_id: customerId }, 'event_type'],
        [{ customer_id: customerId, event_type: 'purchase', properties: [1, 2] }, 'properties'],
        [{ customer_id: customerId, event_type: 'purchase', properties: 'amount=5' }, 'properties'],
        [{ customer_id: customerId, event_type: 'purchase', reference: '' }, 'reference'],
        [{ customer_id: customerId, event_type: 'purchase', points: 500 }, 'points'],
      ];
      for (const [body, path] of cases) {
        const response = await record(key, body);
        expectError(response, 400, 'validation_error');
        expect(response.body.details.map((d: { path: string }) => d.path), JSON.stringify(body)).toContain(path);
      }
      expect((await totals(key, customerId)).points.balance).toBe(0);
    });

    it('needs points:write to record and points:read to list; a public key lists only', async () => {
      const biz = await t.business();
      const key = biz.private_key;
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 5 });
      const customerId = await t.newCustomer(key);
      const keyWith = async (permissions: string[]) =>
        (await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', permissions } })).body.key as string;
      const reader = await keyWith(['points:read']);
      const writer = await keyWith(['points:write']);
      const body = { customer_id: customerId, event_type: 'purchase' };

      const denied = await record(reader, body);
      expectError(denied, 403, 'insufficient_permissions');
      expect(denied.body.message).toContain('points:write');
      expectError(await record(biz.public_key, body), 403, 'public_key_not_allowed');
      expectError(await t.request('GET', '/api/v1/events', { key: writer }), 403, 'insufficient_permissions');

      const made = await recorded(writer, body);
      expect((await t.request('GET', '/api/v1/events', { key: reader })).body.map((e: { id: string }) => e.id)).toEqual([made.id]);
      expect((await t.request('GET', '/api/v1/events', { key: biz.public_key })).body.map((e: { id: string }) => e.id)).toEqual([made.id]);
    });
  });

  describe('duplicate references', () => {
    it('refuses a reused reference with 409 duplicate_transaction carrying the original event', async () => {
      const { private_key: key } = await t.business();
      await createType(key, PURCHASE);
      const customerId = await t.newCustomer(key);
      const original = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 120 }, reference: 'order-77' });

      const again = await record(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 999 }, reference: 'order-77' });
      expectError(again, 409, 'duplicate_transaction');
      expect(again.body.event).toEqual(original);
      expect((await totals(key, customerId)).points.balance).toBe(240);
      expect(await walk(key, `/api/v1/events?customer_id=${customerId}`)).toHaveLength(1);

      // References are per customer: another customer may use the same one.
      const other = await t.newCustomer(key);
      expect((await record(key, { customer_id: other, event_type: 'purchase', properties: { amount: 1 }, reference: 'order-77' })).status).toBe(201);
    });

    it('shares references between points transactions, events and redemptions of one customer', async () => {
      const { private_key: key } = await t.business();
      await createType(key, { name: 'visit', display_name: 'Visit', default_points: 50 });
      const customerId = await t.newCustomer(key);

      const txn = await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
        key,
        body: { type: 'earn', amount: 100, reference: 'shared-1' },
      });
      expect(txn.status, txn.text).toBe(201);
      const refusedEvent = await record(key, { customer_id: customerId, event_type: 'visit', reference: 'shared-1' });
      expectError(refusedEvent, 409, 'duplicate_transaction');
      expect(refusedEvent.body.transaction).toEqual(txn.body);

      const event = await recorded(key, { customer_id: customerId, event_type: 'visit', reference: 'shared-2' });
      const refusedTxn = await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
        key,
        body: { type: 'earn', amount: 5, reference: 'shared-2' },
      });
      expectError(refusedTxn, 409, 'duplicate_transaction');
      expect(refusedTxn.body.event).toEqual(event);

      const reward = await t.request('POST', '/api/v1/rewards', { key, body: { title: 'Mug', points_cost: 10, reward_type: 'physical' } });
      expect(reward.status).toBe(201);
      const refusedRedemption = await t.request('POST', `/api/v1/customers/${customerId}/redemptions`, {
        key,
        body: { reward_id: reward.body.id, reference: 'shared-2' },
      });
      expectError(refusedRedemption, 409, 'duplicate_transaction');
      expect(refusedRedemption.body.event).toEqual(event);

      const redemption = await t.request('POST', `/api/v1/customers/${customerId}/redemptions`, {
        key,
        body: { reward_id: reward.body.id, reference: 'shared-3' },
      });
      expect(redemption.status, redemption.text).toBe(201);
      const refusedByRedemption = await record(key, { customer_id: customerId, event_type: 'visit', reference: 'shared-3' });
      expectError(refusedByRedemption, 409, 'duplicate_transaction');
      expect(refusedByRedemption.body.redemption).toMatchObject({ id: redemption.body.id, reward_id: reward.body.id });

      expect((await totals(key, customerId)).points).toEqual({ balance: 140, lifetime_earned: 150, lifetime_redeemed: 10, pending: 0, lifetime_expired: 0, next_expiring: null });
    });

    it('records exactly one event when parallel requests share a reference', async () => {
      const { private_key: key } = await t.business();
      await createType(key, { name: 'visit', display_name: 'Visit', default_points: 7 });
      const customerId = await t.newCustomer(key);
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => record(key, { customer_id: customerId, event_type: 'visit', reference: 'same-visit' })),
      );
      const created = responses.filter((r) => r.status === 201);
      const refused = responses.filter((r) => r.status === 409);
      expect(created).toHaveLength(1);
      expect(refused).toHaveLength(9);
      for (const r of refused) {
        expect(r.body.code).toBe('duplicate_transaction');
        expect(r.body.event).toEqual(created[0]!.body);
      }
      expect((await totals(key, customerId)).points.balance).toBe(7);
    });
  });

  describe('listing events', () => {
    it('lists events oldest first, filtered by customer and event type, in pages, within the business', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      await createType(key, { name: 'visit', display_name: 'Visit', default_points: 1 });
      await createType(key, { name: 'review', display_name: 'Review', default_points: 10 });
      await createType(otherKey, { name: 'visit', display_name: 'Visit', default_points: 1 });
      const ann = await t.newCustomer(key);
      const bob = await t.newCustomer(key);
      const stranger = await t.newCustomer(otherKey);
      await recorded(otherKey, { customer_id: stranger, event_type: 'visit' });

      const made: Array<{ id: string; customer_id: string; event_type: string }> = [];
      const plan: Array<[string, string]> = [
        [ann, 'visit'],
        [bob, 'visit'],
        [ann, 'review'],
        [ann, 'visit'],
        [bob, 'review'],
        [ann, 'visit'],
      ];
      for (const [customerId, eventType] of plan) made.push(await recorded(key, { customer_id: customerId, event_type: eventType }));
      const ids = (list: Array<{ id: string }>) => list.map((e) => e.id);

      expect(ids(await walk(key, '/api/v1/events'))).toEqual(ids(made));
      expect(ids(await walk(key, `/api/v1/events?customer_id=${ann}`))).toEqual(ids(made.filter((e) => e.customer_id === ann)));
      expect(ids(await walk(key, '/api/v1/events?event_type=review'))).toEqual(ids(made.filter((e) => e.event_type === 'review')));
      expect(ids(await walk(key, `/api/v1/events?customer_id=${ann}&event_type=visit`))).toEqual(
        ids(made.filter((e) => e.customer_id === ann && e.event_type === 'visit')),
      );
      expect(await walk(key, `/api/v1/events?customer_id=${stranger}`)).toEqual([]);

      const first = await t.request('GET', `/api/v1/events?customer_id=${ann}&limit=2`, { key });
      expect(ids(first.body)).toEqual(ids(made.filter((e) => e.customer_id === ann)).slice(0, 2));
      const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      expect(next).toContain(`customer_id=${ann}`);
      const paged = await walk(key, `/api/v1/events?customer_id=${ann}&limit=1`);
      expect(ids(paged)).toEqual(ids(made.filter((e) => e.customer_id === ann)));

      expectError(await t.request('GET', '/api/v1/events?limit=0', { key }), 400, 'validation_error');
      expectError(await t.request('GET', '/api/v1/events?limit=201', { key }), 400, 'validation_error');
    });

    it('shows events in the summary’s recent activity and in the ledger', async () => {
      const { private_key: key } = await t.business();
      await createType(key, PURCHASE);
      const customerId = await t.newCustomer(key);
      const earn = await t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
        key,
        body: { type: 'earn', amount: 20, description: 'welcome' },
      });
      expect(earn.status).toBe(201);
      const event = await recorded(key, { customer_id: customerId, event_type: 'purchase', properties: { amount: 120 } });

      const s = await totals(key, customerId);
      expect(s.recent_activity).toEqual([
        { type: 'event', amount: 240, description: expect.any(String), created_at: event.created_at },
        { type: 'earn', amount: 20, description: 'welcome', created_at: earn.body.created_at },
      ]);
      const lines = await ledger(key, customerId);
      expect(lines.map((l) => [l.type, l.amount, l.balance])).toEqual([
        ['earn', 20, 20],
        ['event', 240, 260],
      ]);
      expect(lines[1]!.id).toBe(event.id);
    });
  });
});
