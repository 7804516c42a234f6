import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/test-app.js';

describe('walking skeleton', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('creates a customer, earns, and reads the summary', async () => {
    const { private_key: key } = await t.business();
    const created = await t.request('POST', '/api/v1/customers', { key, body: { email: 'a@example.com' } });
    expect(created.status).toBe(201);
    const earn = await t.request('POST', `/api/v1/customers/${created.body.id}/points/transaction`, {
      key,
      body: { type: 'earn', amount: 10 },
    });
    expect(earn.status).toBe(201);
    const summary = await t.request('GET', `/api/v1/customers/${created.body.id}/summary`, { key });
    expect(summary.body.points).toEqual({ balance: 10, lifetime_earned: 10, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
  });
});
