import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/expectations.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const DAY = 86_400_000;

/** GET /api/v1/customers/{id}/lots through the real app (CONTRACT.md §13, §4). */
describe('customer lots', () => {
  let t: TestApp;
  let key: string;
  let publicKey: string;
  let customer: string;
  const credits: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    ({ private_key: key, public_key: publicKey } = await t.business());
    customer = (await t.request('POST', '/api/v1/customers', { key, body: { email: 'lots@example.com' } })).body.id;
    const points = `/api/v1/customers/${customer}/points/transaction`;
    for (const [amount, expiresIn] of [[40, 30], [30, 10], [20, null]] as const) {
      const body = { type: 'earn', amount, ...(expiresIn ? { expires_at: new Date(Date.now() + expiresIn * DAY).toISOString() } : {}) };
      const res = await t.request('POST', points, { key, body });
      expect(res.status, res.text).toBe(201);
      credits.push(res.body.id);
    }
    // 35 from the soonest-expiring lot first (30 of it), then the next (5 of the 40).
    expect((await t.request('POST', points, { key, body: { type: 'deduct', amount: 35 } })).status).toBe(201);
  });
  afterAll(() => t.close());

  it('lists the lots with points left, oldest first, with what remains of each', async () => {
    const res = await t.request('GET', `/api/v1/customers/${customer}/lots`, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((l: any) => [l.transaction_id, l.amount, l.remaining, l.status])).toEqual([
      [credits[0], 40, 35, 'available'],
      [credits[2], 20, 20, 'available'],
    ]);
    expect(res.body[1]).toMatchObject({ reversed: 0, available_at: null, expires_at: null, created_at: expect.any(String) });
  });

  it('with all=true also the spent ones, keyset-paginated on transaction_id', async () => {
    const first = await t.request('GET', `/api/v1/customers/${customer}/lots?all=true&limit=2`, { key: publicKey });
    expect(first.status, first.text).toBe(200);
    expect(first.body.map((l: any) => [l.transaction_id, l.status])).toEqual([
      [credits[0], 'available'],
      [credits[1], 'spent'],
    ]);
    const next = first.headers.get('link')!;
    expect(next).toBe(`</api/v1/customers/${customer}/lots?all=true&limit=2&starting_after=${credits[1]}>; rel="next"`);
    expect(await t.walk(key, `/api/v1/customers/${customer}/lots?all=true&limit=1`)).toHaveLength(3);
  });

  it('answers 404 for an unknown customer and 400 for a bad query, naming the field', async () => {
    expectError(await t.request('GET', '/api/v1/customers/cust_nobody/lots', { key }), 404, 'customer_not_found');
    const bad = await t.request('GET', `/api/v1/customers/${customer}/lots?all=yes`, { key });
    expectError(bad, 400, 'validation_error');
    expect(bad.body.details[0].path).toBe('query.all');
    const cursor = await t.request('GET', `/api/v1/customers/${customer}/lots?starting_after=txn_unknown`, { key });
    expectError(cursor, 400, 'validation_error');
  });
});
