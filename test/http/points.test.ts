import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';
import { foldPoints } from '../support/fold-points.js';

const TXN_ID = /^txn_[A-Za-z0-9_-]{16,}$/;

interface Totals {
  balance: number;
  lifetime_earned: number;
  lifetime_redeemed: number;
}

describe('points', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const transact = (key: string, customerId: string, body: unknown, headers?: Record<string, string>) =>
    t.request('POST', `/api/v1/customers/${customerId}/points/transaction`, { key, body, ...(headers ? { headers } : {}) });


  async function newCustomer(key: string, email = `c-${Math.random().toString(36).slice(2)}@example.com`) {
    const response = await t.request('POST', '/api/v1/customers', { key, body: { email, first_name: 'Pat', last_name: 'Lee' } });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; email: string };
  }

  async function ok(key: string, customerId: string, body: Record<string, unknown>, headers?: Record<string, string>) {
    const response = await transact(key, customerId, body, headers);
    expect(response.status, response.text).toBe(201);
    return response;
  }

  /** Balance and lifetime totals as the customer resource and the summary both show them (they must agree). */
  async function totals(key: string, customerId: string): Promise<Totals> {
    const [customer, summary] = await Promise.all([
      t.request('GET', `/api/v1/customers/${customerId}`, { key }),
      t.request('GET', `/api/v1/customers/${customerId}/summary`, { key }),
    ]);
    expect(customer.status).toBe(200);
    expect(summary.status).toBe(200);
    const fromCustomer = {
      balance: customer.body.points_balance,
      lifetime_earned: customer.body.lifetime_earned,
      lifetime_redeemed: customer.body.lifetime_redeemed,
    };
    expect(summary.body.points).toEqual({
      ...fromCustomer,
      pending: customer.body.points_pending,
      lifetime_expired: customer.body.lifetime_expired,
      next_expiring: customer.body.next_expiring,
    });
    expect(fromCustomer.balance).toBe(fromCustomer.lifetime_earned - fromCustomer.lifetime_redeemed);
    expect(fromCustomer.balance).toBeGreaterThanOrEqual(0);
    return fromCustomer;
  }

  /** Every item of a list endpoint, following the Link headers. */
  const walk = (key: string, path: string) => t.walk(key, path);

  const ledger = (key: string, customerId: string) => walk(key, `/api/v1/customers/${customerId}/transactions?limit=200`);
  const stream = (key: string, customerId: string) => walk(key, `/api/v1/customers/${customerId}/stream?limit=200`);

  describe('recording transactions', () => {
    it('earns, deducts and adjusts, answering each transaction with the balance after it', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);

      const earn = await ok(key, customer.id, {
        type: 'earn',
        amount: 100,
        description: 'Order 1',
        reference: 'order-1',
        metadata: { order: 1 },
      });
      expect(earn.body).toMatchObject({
        id: expect.stringMatching(TXN_ID),
        customer_id: customer.id,
        type: 'earn',
        amount: 100,
        balance: 100,
        description: 'Order 1',
        reference: 'order-1',
        metadata: { order: 1 },
        created_at: expect.stringMatching(ISO_MS),
      });
      expect(await totals(key, customer.id)).toEqual({ balance: 100, lifetime_earned: 100, lifetime_redeemed: 0 });

      const deduct = await ok(key, customer.id, { type: 'deduct', amount: 30 });
      expect(deduct.body).toEqual({
        id: expect.stringMatching(TXN_ID),
        customer_id: customer.id,
        type: 'deduct',
        amount: 30,
        balance: 70,
        description: null,
        reference: null,
        metadata: {},
        available_at: null,
        expires_at: null,
        created_at: expect.stringMatching(ISO_MS),
      });
      expect(await totals(key, customer.id)).toEqual({ balance: 70, lifetime_earned: 100, lifetime_redeemed: 30 });

      const up = await ok(key, customer.id, { type: 'adjust', amount: 5, description: 'goodwill' });
      expect(up.body).toMatchObject({ type: 'adjust', amount: 5, balance: 75, description: 'goodwill' });
      expect(await totals(key, customer.id)).toEqual({ balance: 75, lifetime_earned: 105, lifetime_redeemed: 30 });

      const down = await ok(key, customer.id, { type: 'adjust', amount: -25, description: 'correction' });
      expect(down.body).toMatchObject({ type: 'adjust', amount: -25, balance: 50 });
      expect(await totals(key, customer.id)).toEqual({ balance: 50, lifetime_earned: 80, lifetime_redeemed: 30 });

      const ids = [earn, deduct, up, down].map((r) => r.body.id);
      expect(new Set(ids).size).toBe(4);
    });

    it('lets a deduct or an adjust take the balance exactly to zero', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      await ok(key, customer.id, { type: 'earn', amount: 40 });
      expect((await ok(key, customer.id, { type: 'deduct', amount: 15 })).body.balance).toBe(25);
      expect((await ok(key, customer.id, { type: 'adjust', amount: -25 })).body.balance).toBe(0);
      expect(await totals(key, customer.id)).toEqual({ balance: 0, lifetime_earned: 15, lifetime_redeemed: 15 });
    });

    it('refuses a deduct larger than the balance with 422 insufficient_points and records nothing', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      await ok(key, customer.id, { type: 'earn', amount: 50 });
      const before = { totals: await totals(key, customer.id), ledger: await ledger(key, customer.id), stream: await stream(key, customer.id) };

      expectError(await transact(key, customer.id, { type: 'deduct', amount: 51, reference: 'too-much' }), 422, 'insufficient_points');

      expect(await totals(key, customer.id)).toEqual(before.totals);
      expect(await ledger(key, customer.id)).toEqual(before.ledger);
      expect(await stream(key, customer.id)).toEqual(before.stream);
      // Nothing was recorded, so the reference of the refused request is still free.
      expect((await ok(key, customer.id, { type: 'deduct', amount: 50, reference: 'too-much' })).body.balance).toBe(0);
    });

    it('refuses a deduct on a customer with nothing', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      expectError(await transact(key, customer.id, { type: 'deduct', amount: 1 }), 422, 'insufficient_points');
      expect(await ledger(key, customer.id)).toEqual([]);
    });

    it('refuses a negative adjust below zero with 422 insufficient_points and records nothing', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      await ok(key, customer.id, { type: 'earn', amount: 10 });
      expectError(await transact(key, customer.id, { type: 'adjust', amount: -11 }), 422, 'insufficient_points');
      expect(await totals(key, customer.id)).toEqual({ balance: 10, lifetime_earned: 10, lifetime_redeemed: 0 });
      expect(await ledger(key, customer.id)).toHaveLength(1);
    });

    it('refuses invalid amounts and types with 400 and records nothing', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      const invalid: unknown[] = [
        { type: 'earn', amount: 0 },
        { type: 'deduct', amount: 0 },
        { type: 'adjust', amount: 0 },
        { type: 'earn', amount: -5 },
        { type: 'deduct', amount: -5 },
        { type: 'earn', amount: 1.5 },
        { type: 'adjust', amount: -0.5 },
        { type: 'earn', amount: '10' },
        { type: 'earn', amount: null },
        { type: 'earn' },
        { type: 'earn', amount: 1_000_000_001 },
        { type: 'adjust', amount: -1_000_000_001 },
        { type: 'earn', amount: 1e21 },
        { amount: 10 },
        { type: 'gift', amount: 10 },
        { type: 'EARN', amount: 10 },
        { type: 'earn', amount: 10, colour: 'red' },
        { type: 'earn', amount: 10, metadata: 'not an object' },
        { type: 'earn', amount: 10, metadata: [1, 2] },
        { type: 'earn', amount: 10, reference: '' },
        { type: 'earn', amount: 10, apply_multiplier: 'yes' },
      ];
      for (const body of invalid) {
        const response = await transact(key, customer.id, body);
        expect(response.status, JSON.stringify(body)).toBe(400);
        expect(response.body.code, JSON.stringify(body)).toBe('validation_error');
        expect(response.body.details, JSON.stringify(body)).toEqual(expect.arrayContaining([{ path: expect.any(String), message: expect.any(String) }]));
      }
      const amountIssue = await transact(key, customer.id, { type: 'earn', amount: 0 });
      expect(amountIssue.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'amount' })]));
      expect(await ledger(key, customer.id)).toEqual([]);
      expect(await totals(key, customer.id)).toEqual({ balance: 0, lifetime_earned: 0, lifetime_redeemed: 0 });
    });

    it('accepts an amount of exactly 1,000,000,000', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      expect((await ok(key, customer.id, { type: 'earn', amount: 1_000_000_000 })).body.balance).toBe(1_000_000_000);
      expect((await ok(key, customer.id, { type: 'deduct', amount: 1_000_000_000 })).body.balance).toBe(0);
    });

    it('answers 404 customer_not_found for an unknown customer', async () => {
      const { private_key: key } = await t.business();
      expectError(await transact(key, 'cust_doesnotexist000000', { type: 'earn', amount: 1 }), 404, 'customer_not_found');
    });

    it('applies no multiplier to an earn by a customer without a tier', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      const response = await ok(key, customer.id, { type: 'earn', amount: 37, apply_multiplier: true });
      expect(response.body).toMatchObject({ type: 'earn', amount: 37, base_amount: 37, multiplier: 1, balance: 37 });
      expect(await totals(key, customer.id)).toEqual({ balance: 37, lifetime_earned: 37, lifetime_redeemed: 0 });
    });

    it('refuses apply_multiplier on a deduct or an adjust', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      await ok(key, customer.id, { type: 'earn', amount: 100 });
      expectError(await transact(key, customer.id, { type: 'deduct', amount: 10, apply_multiplier: true }), 400, 'validation_error');
      expectError(await transact(key, customer.id, { type: 'adjust', amount: 10, apply_multiplier: true }), 400, 'validation_error');
      expect(await ledger(key, customer.id)).toHaveLength(1);
    });
  });

  describe('references', () => {
    it('refuses a reused reference with 409 duplicate_transaction carrying the original', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      const original = await ok(key, customer.id, { type: 'earn', amount: 25, reference: 'order-77', description: 'first' });

      for (const body of [
        { type: 'earn', amount: 25, reference: 'order-77', description: 'first' },
        { type: 'earn', amount: 999, reference: 'order-77' },
        { type: 'adjust', amount: -5, reference: 'order-77' },
        { type: 'deduct', amount: 5, reference: 'order-77' },
      ]) {
        const response = await transact(key, customer.id, body);
        expectError(response, 409, 'duplicate_transaction');
        expect(response.body.transaction).toEqual(original.body);
      }
      expect(await ledger(key, customer.id)).toEqual([original.body]);
      expect(await totals(key, customer.id)).toEqual({ balance: 25, lifetime_earned: 25, lifetime_redeemed: 0 });
    });

    it('treats references as case-sensitive strings', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      await ok(key, customer.id, { type: 'earn', amount: 1, reference: 'Order-1' });
      await ok(key, customer.id, { type: 'earn', amount: 1, reference: 'order-1' });
      expect(await ledger(key, customer.id)).toHaveLength(2);
    });

    it('accepts the same reference on another customer', async () => {
      const { private_key: key } = await t.business();
      const a = await newCustomer(key);
      const b = await newCustomer(key);
      const first = await ok(key, a.id, { type: 'earn', amount: 10, reference: 'shared-ref' });
      const second = await ok(key, b.id, { type: 'earn', amount: 20, reference: 'shared-ref' });
      expect(second.body.id).not.toBe(first.body.id);
      expect((await totals(key, a.id)).balance).toBe(10);
      expect((await totals(key, b.id)).balance).toBe(20);
    });
  });

  describe('summary', () => {
    it('shows the customer, points, no tier while none exist, and the 10 newest changes newest first', async () => {
      const { private_key: key, public_key } = await t.business();
      const customer = await newCustomer(key, 'summary@example.com');
      const steps: Array<{ type: string; amount: number; description: string | null; created_at: string }> = [];
      for (let i = 1; i <= 13; i++) {
        const step =
          i % 4 === 0
            ? { type: 'deduct', amount: i, description: `deduct ${i}` }
            : i % 5 === 0
              ? { type: 'adjust', amount: -i, description: null }
              : { type: 'earn', amount: i * 10, description: `earn ${i}` };
        const body = step.description === null ? { type: step.type, amount: step.amount } : step;
        const response = await ok(key, customer.id, body);
        steps.push({ ...step, created_at: response.body.created_at });
        // A profile change is not a balance change: it never shows in the activity.
        if (i === 12) expect((await t.request('PATCH', `/api/v1/customers/${customer.id}`, { key, body: { last_name: 'Lee' } })).status).toBe(200);
      }
      const summary = await t.request('GET', `/api/v1/customers/${customer.id}/summary`, { key: public_key });
      expect(summary.status).toBe(200);
      const earned = steps.filter((s) => s.type !== 'deduct').reduce((sum, s) => sum + s.amount, 0);
      const redeemed = steps.filter((s) => s.type === 'deduct').reduce((sum, s) => sum + s.amount, 0);
      expect(summary.body).toEqual({
        customer: { id: customer.id, email: 'summary@example.com', first_name: 'Pat', last_name: 'Lee' },
        points: { balance: earned - redeemed, lifetime_earned: earned, lifetime_redeemed: redeemed, pending: 0, lifetime_expired: 0, next_expiring: null },
        tier: { current: null, next: null },
        recent_activity: steps.slice(-10).reverse(),
      });
      const stamps = summary.body.recent_activity.map((a: { created_at: string }) => Date.parse(a.created_at));
      expect([...stamps].sort((x, y) => y - x)).toEqual(stamps);
    });

    it('shows an empty activity for a new customer', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      const summary = await t.request('GET', `/api/v1/customers/${customer.id}/summary`, { key });
      expect(summary.body.points).toEqual({ balance: 0, lifetime_earned: 0, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
      expect(summary.body.tier).toEqual({ current: null, next: null });
      expect(summary.body.recent_activity).toEqual([]);
    });

    it('answers 404 customer_not_found for an unknown customer', async () => {
      const { private_key: key } = await t.business();
      expectError(await t.request('GET', '/api/v1/customers/cust_doesnotexist000000/summary', { key }), 404, 'customer_not_found');
    });
  });

  describe('ledger', () => {
    it('lists every transaction oldest first with the balance after each, paginated with Link', async () => {
      const { private_key: key, public_key } = await t.business();
      const customer = await newCustomer(key);
      const responses = [];
      for (let i = 1; i <= 12; i++) {
        const body = i % 3 === 0 ? { type: 'deduct', amount: i } : { type: 'earn', amount: i * 2, reference: `r-${i}` };
        responses.push((await ok(key, customer.id, body)).body);
      }

      const firstPage = await t.request('GET', `/api/v1/customers/${customer.id}/transactions?limit=5`, { key: public_key });
      expect(firstPage.status).toBe(200);
      expect(firstPage.body).toEqual(responses.slice(0, 5));
      expect(firstPage.headers.get('link')).toMatch(/rel="next"/);

      const walked = await walk(public_key, `/api/v1/customers/${customer.id}/transactions?limit=5`);
      expect(walked).toEqual(responses);

      let running = 0;
      for (const line of walked) {
        running += line.type === 'deduct' ? -line.amount : line.amount;
        expect(line.balance).toBe(running);
      }
      expect(running).toBe((await totals(key, customer.id)).balance);

      const defaultPage = await t.request('GET', `/api/v1/customers/${customer.id}/transactions`, { key });
      expect(defaultPage.body).toEqual(responses);
      expect(defaultPage.headers.get('link')).toBeNull();
    });

    it('refuses a cursor from another customer’s ledger and unknown query parameters', async () => {
      const { private_key: key } = await t.business();
      const a = await newCustomer(key);
      const b = await newCustomer(key);
      const fromA = await ok(key, a.id, { type: 'earn', amount: 1 });
      await ok(key, b.id, { type: 'earn', amount: 1 });
      expectError(
        await t.request('GET', `/api/v1/customers/${b.id}/transactions?starting_after=${fromA.body.id}`, { key }),
        400,
        'validation_error',
      );
      expectError(await t.request('GET', `/api/v1/customers/${b.id}/transactions?type=earn`, { key }), 400, 'validation_error');
      expectError(await t.request('GET', `/api/v1/customers/${b.id}/transactions?limit=201`, { key }), 400, 'validation_error');
    });
  });

  describe('event stream', () => {
    it('shows the raw events in order with who, when and which request wrote them', async () => {
      const { private_key: key, public_key, business_id } = await t.business();
      const keys = await t.request('GET', '/api/v1/keys', { key });
      expect(keys.status).toBe(200);
      const privateKeyId = keys.body.find((k: { type: string }) => k.type === 'private').id as string;

      const created = await t.request('POST', '/api/v1/customers', { key, body: { email: 'stream@example.com' } });
      expect(created.status).toBe(201);
      const customerId = created.body.id as string;
      const earn = await ok(key, customerId, { type: 'earn', amount: 40, reference: 'ord-1', metadata: { till: 3 } });
      const deduct = await ok(key, customerId, { type: 'deduct', amount: 15 }, { 'Idempotency-Key': 'deduct-once-1' });
      const adjust = await ok(key, customerId, { type: 'adjust', amount: -5 }, { 'X-Request-Id': 'req_callerChosenId0001' });
      expect(adjust.headers.get('x-request-id')).toBe('req_callerChosenId0001');
      const patched = await t.request('PATCH', `/api/v1/customers/${customerId}`, { key, body: { first_name: 'Sam' } });
      expect(patched.status).toBe(200);

      expectError(await t.request('GET', `/api/v1/customers/${customerId}/stream`, { key: public_key }), 403, 'public_key_not_allowed');

      const events = await stream(key, customerId);
      const writers = [created, earn, deduct, adjust, patched];
      expect(events.map((e) => e.type)).toEqual(['CustomerRegistered', 'PointsEarned', 'PointsDeducted', 'PointsAdjusted', 'CustomerUpdated']);
      events.forEach((event, i) => {
        expect(Object.keys(event).sort()).toEqual(['data', 'metadata', 'position', 'recorded_at', 'type']);
        expect(event.recorded_at).toMatch(ISO_MS);
        expect(event.metadata).toMatchObject({
          business_id,
          actor: privateKeyId,
          request_id: writers[i]!.headers.get('x-request-id'),
          event_id: expect.any(String),
          recorded_at: expect.stringMatching(ISO_MS),
          idempotency_key: i === 2 ? 'deduct-once-1' : null,
        });
        if (i > 0) expect(event.position).toBeGreaterThan(events[i - 1]!.position);
      });
      expect(events[0]!.position).toBe(0);
      expect(new Set(events.map((e) => e.metadata.event_id)).size).toBe(events.length);
      expect(writers.map((w) => w.headers.get('x-request-id'))).toEqual(writers.map(() => expect.stringMatching(/^req_/)));

      expect(events[0]!.data).toMatchObject({ customer_id: customerId, business_id, email: 'stream@example.com' });
      expect(events[1]!.data).toMatchObject({ transaction_id: earn.body.id, amount: 40, balance: 40, reference: 'ord-1', metadata: { till: 3 } });
      expect(events[2]!.data).toMatchObject({ transaction_id: deduct.body.id, amount: 15, balance: 25 });
      expect(events[3]!.data).toMatchObject({ transaction_id: adjust.body.id, amount: -5, balance: 20 });
      expect(events[4]!.data).toMatchObject({ first_name: 'Sam' });

      // Folding the stream gives what the read model shows.
      const { balance, earned, redeemed } = foldPoints(events);
      expect(await totals(key, customerId)).toEqual({ balance, lifetime_earned: earned, lifetime_redeemed: redeemed });
    });

    it('pages through the stream by position', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      for (let i = 1; i <= 6; i++) await ok(key, customer.id, { type: 'earn', amount: i });
      const all = await stream(key, customer.id);
      expect(all).toHaveLength(7);
      const paged = await walk(key, `/api/v1/customers/${customer.id}/stream?limit=2`);
      expect(paged).toEqual(all);
      const after = await t.request('GET', `/api/v1/customers/${customer.id}/stream?starting_after=${all[3]!.position}`, { key });
      expect(after.body).toEqual(all.slice(4));
    });
  });

  describe('read-your-writes', () => {
    it('shows every successful write to a read made right after it', async () => {
      const { private_key: key } = await t.business();
      const customer = await newCustomer(key);
      let expected = 0;
      for (let i = 1; i <= 40; i++) {
        const body = i % 5 === 0 ? { type: 'deduct', amount: 3 } : { type: 'earn', amount: i };
        const response = await ok(key, customer.id, body);
        expected += body.type === 'deduct' ? -body.amount : body.amount;
        expect(response.body.balance).toBe(expected);

        const read = await t.request('GET', `/api/v1/customers/${customer.id}`, { key });
        expect(read.body.points_balance).toBe(expected);
        const lines = await t.request('GET', `/api/v1/customers/${customer.id}/transactions?limit=200`, { key });
        expect(lines.body.at(-1)).toEqual(response.body);
        expect(lines.body).toHaveLength(i);
      }
    });

    it('shows a new or changed customer to a read made right after it', async () => {
      const { private_key: key } = await t.business();
      for (let i = 0; i < 20; i++) {
        const created = await newCustomer(key, `ryw-${i}@example.com`);
        const found = await t.request('GET', `/api/v1/customers?email=ryw-${i}%40example.com`, { key });
        expect(found.body.map((c: { id: string }) => c.id)).toEqual([created.id]);
        const patched = await t.request('PATCH', `/api/v1/customers/${created.id}`, { key, body: { last_name: `Name ${i}` } });
        expect(patched.status).toBe(200);
        const read = await t.request('GET', `/api/v1/customers/${created.id}`, { key });
        expect(read.body.last_name).toBe(`Name ${i}`);
      }
    });
  });
});
